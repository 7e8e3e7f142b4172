"""moto's S3 server (python3-moto), its signature check made over the query string as the client
sent it: `python3 moto_server.py -H 127.0.0.1 -p PORT`.

moto rebuilds each request's canonical request from werkzeug's `request.url`, and werkzeug 2.3 and
later (Debian 13's 3.1) decode characters such as %2F in that URL's query, so moto checks a listing
(`?prefix=fm%2F`, as SigV4 requires it encoded and as boto3 and feeder sign it) over `prefix=fm/`
and refuses every client's listing with SignatureDoesNotMatch (moto issue 5948). Here the check
gets the query as received (WSGI's QUERY_STRING); the signature is still checked in full, over the
path, headers and payload hash moto sees.
"""

import sys
from urllib.parse import urlsplit, urlunsplit

from moto.core.responses import ActionAuthenticatorMixin

_check = ActionAuthenticatorMixin._authenticate_and_authorize_action


def _check_over_the_query_received(self, iam_request_cls, *args, **kwargs):
    environ = getattr(getattr(self, "request", None), "environ", None)
    if not environ or "QUERY_STRING" not in environ:
        return _check(self, iam_request_cls, *args, **kwargs)
    url = self.uri
    self.uri = urlunsplit(urlsplit(url)._replace(query=environ["QUERY_STRING"]))
    try:
        return _check(self, iam_request_cls, *args, **kwargs)
    finally:
        self.uri = url


ActionAuthenticatorMixin._authenticate_and_authorize_action = _check_over_the_query_received

if __name__ == "__main__":
    from moto.server import main
    sys.exit(main(sys.argv[1:]))
