"""Servers that misbehave as real infrastructure does, started by each test on loopback, bounded in
requests, bytes and time: what they cost the loader is bounded too, and its errors stay short."""

import http.server
import threading
import time

import pytest

import feeder


class HostileServer:
    """An HTTP server on 127.0.0.1 whose replies `reply(handler)` writes; counts the body bytes sent."""

    def __init__(self, reply):
        self.sent = 0
        self.requests = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body written apart: no 40 ms wait on each reply

            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests += 1
                reply(self, server)

            do_HEAD = do_GET

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}/{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _send_body(handler, server, total, chunk=b"x" * 65536):
    """Up to `total` bytes of body, until the client hangs up."""
    sent = 0
    try:
        while sent < total:
            handler.wfile.write(chunk)
            sent += len(chunk)
            server.sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass


@pytest.fixture
def huge_error_page():
    """A file of 4,096 bytes by HEAD, whose every GET is a 403 with a 512 MiB page; nothing else is there."""
    def reply(handler, server):
        if not handler.path.endswith(".parquet"):
            handler.send_response(404)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if handler.command == "HEAD":
            handler.send_response(200)
            handler.send_header("Content-Length", "4096")
            handler.send_header("ETag", '"v1"')
            handler.end_headers()
            return
        handler.send_response(403)
        handler.send_header("Content-Length", str(512 << 20))
        handler.end_headers()
        _send_body(handler, server, 512 << 20)

    server = HostileServer(reply)
    yield server
    server.close()


def test_a_huge_error_page_is_read_only_to_its_prefix(huge_error_page):
    feeder.set_storage_options(max_retries=1)
    try:
        start = time.monotonic()
        with pytest.raises(feeder.DataError) as raised:
            feeder.DataLoader(huge_error_page.url("set/train.parquet"))
        took = time.monotonic() - start
    finally:
        feeder.set_storage_options()
    message = str(raised.value)
    assert "403" in message and len(message) < 1000, message
    # What the server got out before the loader hung up: the prefix, and what the sockets buffer.
    assert huge_error_page.sent < 32 << 20, huge_error_page.sent
    assert took < 20


@pytest.fixture
def long_s3_error():
    """An S3 endpoint whose object is there by HEAD, and whose GETs are refused with a 10,000-character
    message (a 503 on every other request, retried)."""
    body = (b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>" + b"y" * 10000 +
            b"</Message></Error>")

    def reply(handler, server):
        if handler.command == "HEAD":
            handler.send_response(200 if handler.path.split("?")[0].endswith(".parquet") else 404)
            handler.send_header("Content-Length", "4096" if handler.path.endswith(".parquet") else "0")
            handler.send_header("ETag", '"v1"')
            handler.end_headers()
            return
        handler.send_response(403)
        handler.send_header("Content-Type", "application/xml")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    server = HostileServer(reply)
    yield server
    server.close()


def test_an_s3_error_message_is_quoted_to_a_line(long_s3_error):
    feeder.set_storage_options(endpoint=long_s3_error.url("")[:-1], anonymous=True, max_retries=1)
    try:
        with pytest.raises(feeder.DataError) as raised:
            feeder.DataLoader("s3://bucket/set/train.parquet")
    finally:
        feeder.set_storage_options()
    message = str(raised.value)
    assert "AccessDenied" in message and "yyy..." in message and len(message) < 1000, message[:300]


def _endless_listing(new_token_each_page):
    """An S3 endpoint whose listing of any prefix is truncated on every page: with the same
    continuation token each time, or a new one (and a new key) each page."""
    def reply(handler, server):
        page = server.requests
        token = f"t{page}" if new_token_each_page else "again"
        endless = "true" if page < 2000 else "false"  # the test's own bound, should a client follow it
        body = (f"<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>{endless}</IsTruncated>"
                f"<Contents><Key>set/part-{page:08d}.parquet</Key><Size>4096</Size><ETag>\"e\"</ETag></Contents>"
                f"<NextContinuationToken>{token}</NextContinuationToken></ListBucketResult>").encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/xml")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command == "GET":
            handler.wfile.write(body)

    return HostileServer(reply)


@pytest.mark.parametrize("new_token_each_page", [False, True])
def test_a_listing_that_never_ends_is_refused(new_token_each_page):
    server = _endless_listing(new_token_each_page)
    feeder.set_storage_options(endpoint=server.url("")[:-1], anonymous=True, max_retries=0, max_listed_keys=300)
    try:
        start = time.monotonic()
        with pytest.raises(feeder.DataError) as raised:
            feeder.DataLoader("s3://bucket/set/")
        took = time.monotonic() - start
    finally:
        feeder.set_storage_options()
        server.close()
    message = str(raised.value)
    assert ("max_listed_keys" in message and "300 keys" in message) if new_token_each_page else (
        "continuation token it had handed out before" in message), message
    assert server.requests <= 302 and took < 30


def _small_set(directory):
    """A small Parquet set in `directory` (FashionMNIST's first 512 test images): small.parquet."""
    import gzip
    import struct
    import numpy as np
    source = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
    with gzip.open(source) as f:
        f.read(16)
        images = np.frombuffer(f.read(512 * 784), dtype=np.uint8)
    with gzip.open(source.replace("images-idx3", "labels-idx1")) as f:
        f.read(8)
        labels = f.read(512)
    idx = directory / "small-images-idx3-ubyte"
    idx.write_bytes(struct.pack(">IIII", 0x0803, 512, 28, 28) + images.tobytes())
    (directory / "small-labels-idx1-ubyte").write_bytes(struct.pack(">II", 0x0801, 512) + labels)
    feeder.convert(idx, directory / "small.parquet")
    return directory / "small.parquet"


def _files_server(directory, refuse=None, answer=None, validator="ETag"):
    """A web server over `directory` with range reads (206) and ETag "v1". refuse(handler): True to
    answer 401 instead; answer(server, data, first, last): (body, Content-Range, version) of a range
    request, to lie with; validator: the header that names the version ("ETag", "Last-Modified"
    or None)."""
    return HostileServer(_files_reply(directory, refuse, answer, validator))


def _files_reply(directory, refuse=None, answer=None, validator="ETag"):
    """_files_server's replies."""
    def reply(handler, server):
        path = directory / handler.path.split("?")[0].lstrip("/")
        if refuse is not None and refuse(handler):
            handler.send_response(401)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if not path.is_file():
            handler.send_response(404)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        data = path.read_bytes()
        ranged = handler.headers.get("Range")
        etag = '"v1"'
        if ranged:
            first, last = (int(v) for v in ranged.split("=")[1].split("-"))
            body, content_range = data[first:last + 1], f"bytes {first}-{min(last, len(data) - 1)}/{len(data)}"
            if answer is not None:
                body, content_range, etag = answer(server, data, first, last)
            handler.send_response(206)
            handler.send_header("Content-Range", content_range)
        else:
            body = data
            handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        if validator is not None:
            handler.send_header(validator, etag if validator == "ETag" else _LAST_MODIFIED[etag])
        handler.end_headers()
        if handler.command == "GET":
            handler.wfile.write(body)

    return reply


# The dates _files_reply gives as Last-Modified for the versions "v1" and "v2".
_LAST_MODIFIED = {'"v1"': "Mon, 07 Dec 2026 10:00:00 GMT", '"v2"': "Mon, 07 Dec 2026 10:00:05 GMT"}


@pytest.fixture
def basic_auth_files(tmp_path):
    """The small set on a server that serves only requests with alice:s3cret's Basic authorization."""
    import base64
    _small_set(tmp_path)
    expected = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    server = _files_server(tmp_path, refuse=lambda handler: handler.headers.get("Authorization") != expected)
    yield server
    server.close()


def test_credentials_in_a_url_are_used_and_never_printed(basic_auth_files):
    port = basic_auth_files.port
    url = f"http://alice:s3cret@127.0.0.1:{port}/small.parquet#X-Amz-Signature=abcdef"
    loader = feeder.DataLoader(url, batch_size=128)
    assert sum(len(labels) for _, labels in loader) == 512  # the credentials were sent: the server refuses others
    printed = [repr(loader.dataset), loader.dataset.name, loader.source_description, loader.plan,
               str(loader.state_dict()), feeder.inspect(url)]
    with pytest.raises(feeder.DataError) as missing:
        feeder.DataLoader(f"http://alice:s3cret@127.0.0.1:{port}/missing.parquet")
    printed.append(str(missing.value))
    for text in printed:
        assert "s3cret" not in text and "alice" not in text and "X-Amz-Signature" not in text, text
    assert f"http://127.0.0.1:{port}/small.parquet" in repr(loader.dataset)


def _read_all(url):
    return sum(len(labels) for _, labels in feeder.DataLoader(url, batch_size=128, memory_budget="64MiB"))


def _reading_fails(tmp_path, match, **server_options):
    """The small set on a _files_server(**server_options): reading it fails with a DataError matching `match`."""
    _small_set(tmp_path)
    server = _files_server(tmp_path, **server_options)
    try:
        with pytest.raises(feeder.DataError, match=match):
            _read_all(server.url("small.parquet"))
    finally:
        server.close()


def _replaced_after_two_ranges(server, data, first, last):
    """After the first two ranges, every reply is of a new version ("v2", other bytes), asked with a
    condition or not."""
    if server.requests <= 3:
        return data[first:last + 1], f"bytes {first}-{last}/{len(data)}", '"v1"'
    return bytes(255 - b for b in data[first:last + 1]), f"bytes {first}-{last}/{len(data)}", '"v2"'


def test_an_object_replaced_behind_a_proxy_that_ignores_if_match_fails_by_name(tmp_path):
    _reading_fails(tmp_path, r"small.parquet: changed since it was opened \(its ETag is \"v2\"",
                   answer=_replaced_after_two_ranges)


def test_an_object_replaced_on_a_server_without_etags_fails_by_its_last_modified(tmp_path):
    # As above, with Last-Modified the only validator (as Python's http.server gives).
    _reading_fails(tmp_path, r"small.parquet: changed since it was opened \(its Last-Modified is Mon, 07 Dec 2026 "
                             r"10:00:05 GMT, was Mon, 07 Dec 2026 10:00:00", answer=_replaced_after_two_ranges,
                   validator="Last-Modified")


def test_an_object_that_names_no_version_is_not_read_in_ranges(tmp_path):
    _reading_fails(tmp_path, r"small.parquet: the server names no version of it \(neither ETag nor Last-Modified\)",
                   validator=None)


def _shifted_by_one(server, data, first, last):
    """The bytes one further on than asked (the same length), honestly labelled."""
    shifted = min(first + 1, len(data) - (last - first + 1))
    return data[shifted:shifted + last - first + 1], f"bytes {shifted}-{shifted + last - first}/{len(data)}", '"v1"'


def test_a_reply_of_other_bytes_than_asked_fails_by_name(tmp_path):
    _reading_fails(tmp_path, r"small.parquet: asked for bytes \d+-\d+ of \d+, the server sent", answer=_shifted_by_one)


def test_a_short_reply_is_tried_again(tmp_path):
    # The first three range replies carry half the bytes asked, with honest headers for them.
    _small_set(tmp_path)

    shortened = []

    def answer(server, data, first, last):
        if len(shortened) < 3 and last > first:
            shortened.append(first)
            last = first + (last - first) // 2
        return data[first:last + 1], f"bytes {first}-{last}/{len(data)}", '"v1"'

    server = _files_server(tmp_path, answer=answer)
    before = feeder.storage_stats()["retries"]
    try:
        assert _read_all(server.url("small.parquet")) == 512
    finally:
        server.close()
    assert len(shortened) == 3 and feeder.storage_stats()["retries"] - before >= 3


def test_a_listed_key_below_the_prefixs_level_is_refused_by_name():
    # A server that ignores the delimiter: "set/deeper/part.parquet" among the keys of "set/".
    def reply(handler, server):
        body = (b"<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>false</IsTruncated>"
                b"<Contents><Key>set/deeper/part.parquet</Key><Size>4096</Size><ETag>\"e\"</ETag></Contents>"
                b"</ListBucketResult>")
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command == "GET":
            handler.wfile.write(body)

    server = HostileServer(reply)
    feeder.set_storage_options(endpoint=server.url("")[:-1], anonymous=True, max_retries=0)
    try:
        with pytest.raises(feeder.DataError, match=r"key 'set/deeper/part.parquet', which is not one level below"):
            feeder.DataLoader("s3://bucket/set/")
    finally:
        feeder.set_storage_options()
        server.close()


def test_ctrl_c_stops_the_opening_of_a_set_on_a_server_that_does_not_answer():
    # The server takes a request and says nothing (for at most 60 s); Ctrl-C comes 1 s into the open.
    # The time is measured in the child, from the open: importing torch takes seconds on a busy machine.
    import subprocess
    import sys
    release = threading.Event()

    def reply(handler, server):
        release.wait(60)

    server = HostileServer(reply)
    script = f"""
import os, signal, threading, time, feeder
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.monotonic()
try:
    feeder.DataLoader("{server.url('set/train.parquet')}")
except KeyboardInterrupt:
    print("interrupted after", round(time.monotonic() - start, 2))
"""
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=55)
    finally:
        release.set()
        server.close()
    assert done.stdout.startswith("interrupted after"), (done.stdout, done.stderr[-2000:])
    assert float(done.stdout.split()[-1]) < 1.8  # within a second of the Ctrl-C


def test_a_body_that_trickles_meets_its_deadline(tmp_path):
    # Range replies announce their length, then send 10 bytes a second: never a stall, never done.
    _small_set(tmp_path)
    data = (tmp_path / "small.parquet").read_bytes()
    stop = threading.Event()

    def reply(handler, server):
        if not handler.path.endswith("small.parquet"):
            handler.send_response(404)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if handler.command == "HEAD":
            handler.send_response(200)
            handler.send_header("Content-Length", str(len(data)))
            handler.send_header("ETag", '"v1"')
            handler.end_headers()
            return
        first, last = (int(v) for v in handler.headers["Range"].split("=")[1].split("-"))
        handler.send_response(206)
        handler.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
        handler.send_header("Content-Length", str(last - first + 1))
        handler.send_header("ETag", '"v1"')
        handler.end_headers()
        try:
            for offset in range(first, min(last + 1, first + 600)):  # at most a minute of it
                if stop.wait(0.1):
                    return
                handler.wfile.write(data[offset:offset + 1])
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    server = HostileServer(reply)
    feeder.set_storage_options(max_retries=0, stall_seconds=1, min_bytes_per_second=1 << 20)
    try:
        start = time.monotonic()
        with pytest.raises(feeder.DataError, match=r"took over its deadline of 11\.\d s .*gave up after 1 attempts"):
            feeder.DataLoader(server.url("small.parquet"))
        took = time.monotonic() - start
    finally:
        feeder.set_storage_options()
        stop.set()
        server.close()
    assert took < 20, took  # an attempt of 10 + 1 + (at most 1) s: a transient failure, not retried here


def test_giving_up_takes_the_time_the_message_says(tmp_path):
    # The set is listed and read; when its shard is opened again to be read row group by row group,
    # the server takes every request and says nothing. Giving up on that must not be followed by
    # asking the same server what became of the file (another attempt's wait the message omits).
    import re
    _small_set(tmp_path)
    files = _files_reply(tmp_path)
    stop = threading.Event()
    hung = threading.Event()
    read = threading.Event()

    def reply(handler, server):
        if handler.command == "HEAD" and read.is_set():
            hung.set()
        if hung.is_set():
            stop.wait(40)  # at most
            return
        read.set() if handler.command == "GET" else None
        files(handler, server)

    server = HostileServer(reply)
    feeder.set_storage_options(max_retries=0, stall_seconds=3)
    try:
        start = time.monotonic()
        with pytest.raises(feeder.DataError, match=r"gave up after 1 attempts in \d+\.\d s") as raised:
            feeder.DataLoader(server.url("small.parquet"), batch_size=128)
        took = time.monotonic() - start
    finally:
        feeder.set_storage_options()
        stop.set()
        server.close()
    said = float(re.search(r"gave up after 1 attempts in (\d+\.\d) s", str(raised.value)).group(1))
    assert said >= 3 and took < said + 1.5, (took, str(raised.value))  # no other request waited out after it
