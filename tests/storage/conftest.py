"""Servers for the remote-data tests, started here on loopback and stopped at the end:

- s3rver (npm, tests/storage/package.json), a real S3 server; the data is uploaded by boto3, an
  independent client. Debian 12's boto3 predates AWS_ENDPOINT_URL: it is given the endpoint.
- nginx (nginx-light) serving the same files over HTTP and HTTPS (a certificate made here), with
  locations that add latency, answer 503 or cut the connection on a schedule, and deny access with
  S3's XML (libnginx-mod-http-lua).

Every wait is bounded; nothing leaves 127.0.0.1.
"""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FEEDER = os.environ.get("FEEDER", str(ROOT / "build" / "feeder"))
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
BUCKET = "feeder-test"
# Credentials the tests use: s3rver knows the key S3RVER and does not check signatures. The secret
# and token must never appear in anything feeder prints.
ACCESS_KEY = "S3RVER"
SECRET_KEY = "feeder-secret-must-not-be-printed"
SESSION_TOKEN = "feeder-session-token-must-not-be-printed"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, what, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {seconds} s")


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


class S3Server:
    """s3rver on 127.0.0.1: start() and stop() (a test kills and restarts it)."""

    def __init__(self, directory):
        self.directory = directory
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = None

    def start(self):
        modules = HERE / "node_modules"
        if not (modules / "s3rver").is_dir():
            subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE, check=True,
                           timeout=600)
        # s3rver's continuation tokens use DES, which Node's OpenSSL 3 keeps in its legacy provider.
        self.process = subprocess.Popen(
            ["node", "--openssl-legacy-provider", str(modules / "s3rver" / "bin" / "s3rver.js"), "-d",
             str(self.directory), "-a", "127.0.0.1", "-p", str(self.port), "-s", "--configure-bucket", BUCKET],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(self.port, self.process, "s3rver")

    def stop(self):
        stop(self.process)


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    server = S3Server(tmp_path_factory.mktemp("s3rver"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def boto(s3):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))


def upload(boto, local, prefix):
    """Every file under `local` to s3://BUCKET/prefix/, by boto3."""
    local = Path(local)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        boto.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(local).as_posix()}")
    return f"s3://{BUCKET}/{prefix}/"


NGINX_CONF = """
daemon off;
{user}
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log;
{lua_modules}
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {work}/client;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;
  default_type application/octet-stream;
  log_format counted '$request_method $body_bytes_sent';
  log_format hosted '$request_method $host $request_uri $status';
  log_format signed '$request_method|$request_uri|$http_host|$http_x_amz_date|$http_x_amz_content_sha256|$http_x_amz_security_token|$http_authorization';
  {lua_dict}
  {upstreams}
  server {{
    listen 127.0.0.1:{http_port};
    listen 127.0.0.1:{https_port} ssl;
    ssl_certificate {work}/cert.pem;
    ssl_certificate_key {work}/key.pem;
    root {root};
    # An S3 endpoint at /signed/ (path-style: <root>/<bucket>/<key>) that logs each request's
    # signed parts, for botocore to sign again; a listing there is empty.
    location /signed/ {{
      access_log {work}/signed.log signed;
      if ($args ~ "list-type=2") {{
        return 200 '<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>';
      }}
      alias {root}/;
    }}
    # The set as it is, each response's method and body size logged (what a read cost).
    location /counted/ {{
      access_log {work}/counted.log counted;
      alias {root}/;
    }}
    location /deny/ {{
      default_type application/xml;
      return 403 '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied by the test</Message></Error>';
    }}
    {lua_locations}
  }}
  # S3's virtual-hosted addressing: <bucket>.localhost:<port>/<key> is <root>/<bucket>/<key>
  # (libcurl takes *.localhost for loopback itself, no resolver asked).
  server {{
    listen 127.0.0.1:{vhost_port};
    server_name ~^(?<bucket>[a-z0-9-]+)\\.localhost$;
    access_log {work}/vhost.log hosted;
    root {root}/$bucket;
  }}
  # A forward proxy for plain HTTP (what http_proxy names): each request passed on to its URL's host.
  server {{
    listen 127.0.0.1:{proxy_port};
    access_log {work}/proxy.log hosted;
    location / {{
      proxy_pass http://$http_host$request_uri;
      proxy_http_version 1.1;
    }}
  }}
}}
"""

# Latency before every request (a store's time to first byte), failures on a schedule, and a bucket
# in another region.
LUA_LOCATIONS = """
    location /slow/ {
      access_by_lua_block { ngx.sleep(tonumber(ngx.var.arg_delay or "0.025")) }
      alias %(root)s/;
    }
    # 0.1 s a request, and a stall (8 s more) while the file stall-switch exists.
    location /stall/ {
      access_by_lua_block {
        ngx.sleep(0.1)
        local switch = io.open("%(root)s/stall-switch")
        if switch then switch:close(); ngx.sleep(8) end
      }
      alias %(root)s/;
    }
%(failing)s    # An S3 endpoint (path-style) whose bucket is in eu-west-1: a request signed for another region
    # gets S3's 301 with x-amz-bucket-region; a listing is empty.
    location /region/ {
      access_by_lua_block {
        local auth = ngx.var.http_authorization or ""
        if not string.find(auth, "/eu-west-1/s3/", 1, true) then
          ngx.status = 301
          ngx.header["x-amz-bucket-region"] = "eu-west-1"
          ngx.header["Content-Type"] = "application/xml"
          ngx.print("<Error><Code>PermanentRedirect</Code><Message>the bucket is in eu-west-1</Message></Error>")
          return ngx.exit(301)
        end
        if string.find(ngx.var.args or "", "list-type=2", 1, true) then
          ngx.header["Content-Type"] = "application/xml"
          ngx.print("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>")
          return ngx.exit(200)
        end
      }
      alias %(root)s/;
    }
"""
# Every third request of a location fails: /flaky/ answers 503, /reset/ closes the connection (444).
FAILING_LOCATION = """
    location /%(name)s/ {
      access_by_lua_block {
        local n = ngx.shared.counts:incr("%(name)s", 1, 0)
        if n %% 3 == 0 then ngx.exit(%(status)d) end
      }
      alias %(root)s/;
    }
"""


# The S3 server behind nginx: connections to it kept alive, and each response passed on through a
# buffer of 256 KiB as it arrives (the default, a page, costs the proxy a pair of system calls per
# 4 KiB: CPU the loader's machine would not spend on a real store's latency).
S3_UPSTREAM = """
  upstream s3server {
    server %(upstream)s;
    keepalive 16;
  }
"""

# An S3 endpoint 25 ms away (/s3slow/: nginx waits before passing each request on), and the same
# proxy without the wait (/s3proxy/: what the proxy itself costs).
S3_PROXY_LOCATION = """
    location /s3slow/ {
      access_by_lua_block { ngx.sleep(0.025) }
      proxy_pass http://s3server/;
      proxy_set_header Host $http_host;
      proxy_set_header Connection "";
      proxy_http_version 1.1;
      proxy_buffering off;
      proxy_buffer_size 256k;
      proxy_buffers 4 256k;
      proxy_busy_buffers_size 256k;
    }
    location /s3proxy/ {
      proxy_pass http://s3server/;
      proxy_set_header Host $http_host;
      proxy_set_header Connection "";
      proxy_http_version 1.1;
      proxy_buffering off;
      proxy_buffer_size 256k;
      proxy_buffers 4 256k;
      proxy_busy_buffers_size 256k;
    }
"""


class Nginx:
    def __init__(self, work, root, s3_upstream=None):
        self.work = Path(work)
        self.root = Path(root)
        self.s3_upstream = s3_upstream
        self.http_port = free_port()
        self.https_port = free_port()
        self.vhost_port = free_port()
        self.proxy_port = free_port()
        self.http = f"http://127.0.0.1:{self.http_port}"
        self.https = f"https://127.0.0.1:{self.https_port}"
        self.cert = self.work / "cert.pem"
        self.lua = Path("/usr/lib/nginx/modules/ngx_http_lua_module.so").exists()

    def start(self):
        # A certificate for 127.0.0.1, made here: HTTPS is trusted only through --ca-bundle.
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-keyout", str(self.work / "key.pem"), "-out", str(self.cert), "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
        conf = NGINX_CONF.format(
            # Started by root, nginx's workers would run as nobody, who cannot read a test's files.
            user="user root;" if os.geteuid() == 0 else "",
            work=self.work, root=self.root, http_port=self.http_port, https_port=self.https_port,
            vhost_port=self.vhost_port, proxy_port=self.proxy_port,
            lua_modules=("load_module /usr/lib/nginx/modules/ndk_http_module.so;\n"
                         "load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;") if self.lua else "",
            lua_dict="lua_shared_dict counts 1m;" if self.lua else "",
            upstreams=(S3_UPSTREAM % {"upstream": self.s3_upstream.split("://", 1)[1]}
                       if self.lua and self.s3_upstream else ""),
            lua_locations=(LUA_LOCATIONS % {"root": self.root, "failing": "".join(
                FAILING_LOCATION % {"name": name, "status": status, "root": self.root}
                for name, status in (("flaky", 503), ("reset", 444)))} +
                           (S3_PROXY_LOCATION if self.s3_upstream else ""))
            if self.lua else "")
        (self.work / "nginx.conf").write_text(conf)
        self.process = subprocess.Popen(["nginx", "-p", str(self.work), "-c", str(self.work / "nginx.conf")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(self.http_port, self.process, "nginx")
        wait_for_port(self.https_port, self.process, "nginx")
        wait_for_port(self.vhost_port, self.process, "nginx")
        wait_for_port(self.proxy_port, self.process, "nginx")

    def stop(self):
        stop(self.process)


@pytest.fixture(scope="session")
def sets(tmp_path_factory):
    """Local sets, served as they are by nginx and uploaded to S3 by the tests that need them:
    fm/test (FashionMNIST's test split in 4 shards with feeder's index), fm/train (60,000 in 4),
    footers/ (the test shards without the index: another writer's files)."""
    root = tmp_path_factory.mktemp("www")
    for split, images, rows in (("test", "t10k", 2500), ("train", "train", 15000)):
        subprocess.run([FEEDER, "convert", f"{FASHION_MNIST}/{images}-images-idx3-ubyte.gz", str(root / "fm" / split),
                        "--shard-rows", str(rows)], check=True, capture_output=True, timeout=600)
    (root / "footers").mkdir()
    for shard in sorted((root / "fm" / "test").glob("*.parquet")):
        shutil.copy(shard, root / "footers" / shard.name)
    return root


@pytest.fixture(scope="session")
def web(tmp_path_factory, sets):
    server = Nginx(tmp_path_factory.mktemp("nginx"), sets)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def uploaded(boto, sets):
    """The sets in the S3 server, by boto3: {name: s3 URL}."""
    return {name: upload(boto, sets / name, name) for name in ("fm/test", "fm/train", "footers")}
