"""Remote data end to end: sets in a real S3 server (s3rver) and behind nginx over HTTP and HTTPS,
read by feeder's CLI and Python loader, against the same sets on local disk."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from conftest import ACCESS_KEY, BUCKET, FASHION_MNIST, FEEDER, SECRET_KEY, SESSION_TOKEN, upload

import feeder


@pytest.fixture
def aws_env(s3, tmp_path, monkeypatch):
    """The AWS variables every run gets (and an empty HOME: no ~/.aws of the machine's)."""
    env = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_SESSION_TOKEN": SESSION_TOKEN,
           "AWS_ENDPOINT_URL": s3.endpoint, "HOME": str(tmp_path)}
    for name in ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3", "AWS_CA_BUNDLE",
                 "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    feeder.set_storage_options()  # file systems made again, with these variables
    yield env
    feeder.set_storage_options()


def run(args, expect=0, timeout=300):
    """Runs the CLI; checks its exit code and that no secret is in what it printed."""
    process = subprocess.run([FEEDER, *args], capture_output=True, text=True, timeout=timeout)
    output = process.stdout + process.stderr
    assert SECRET_KEY not in output and SESSION_TOKEN not in output, output
    assert process.returncode == expect, f"exit {process.returncode}, expected {expect}:\n{output}"
    return output


def fingerprint(output):
    found = re.search(r"fingerprint: (\w+)", output)
    assert found, output
    return found.group(1)


def digest(source, workers, budget="7MB", **kwargs):
    """Every batch of a shuffled, streamed epoch, hashed; and the number of samples. The budgets
    here hold about 3.8 MB of batch buffers (6 of 200 float32 1x28x28 images) beside the stream."""
    h = hashlib.sha256()
    count = 0
    loader = feeder.DataLoader(source, batch_size=200, shuffle=True, num_workers=workers, seed=11,
                               memory_budget=budget, **kwargs)
    for images, labels in loader:
        h.update(images.numpy().tobytes())
        h.update(labels.numpy().tobytes())
        count += len(labels)
    return h.hexdigest(), count


def test_inspect_reads_the_same_set_from_s3_http_and_https(aws_env, sets, uploaded, web):
    local = fingerprint(run(["inspect", str(sets / "fm" / "test")]))
    assert fingerprint(run(["inspect", uploaded["fm/test"]])) == local
    assert fingerprint(run(["inspect", f"{web.http}/fm/test/"])) == local
    assert fingerprint(run(["inspect", f"{web.https}/fm/test/", "--ca-bundle", str(web.cert)])) == local
    # One file by its URL.
    assert "rows: 2500" in run(["inspect", f"{web.http}/fm/test/part-00001.parquet"])


def test_https_with_an_untrusted_certificate_fails_by_name(aws_env, web):
    output = run(["inspect", f"{web.https}/fm/test/"], expect=1)
    assert f"{web.https}/fm/test/" in output and "certificate" in output.lower(), output


def test_a_set_without_index_is_read_from_its_footers_by_range(aws_env, sets, uploaded, web):
    local = fingerprint(run(["inspect", str(sets / "footers")]))
    assert fingerprint(run(["inspect", uploaded["footers"]])) == local
    # Plain HTTP has no listing: a directory there needs feeder's index.
    output = run(["inspect", f"{web.http}/footers/"], expect=1)
    assert "no listing" in output and "index.json" in output, output


@pytest.mark.parametrize("workers", [1, 2])
def test_batches_are_those_of_local_disk(aws_env, sets, uploaded, web, workers):
    local = digest(str(sets / "fm" / "test"), workers)
    assert local[1] == 10000
    before = feeder.storage_stats()
    assert digest(uploaded["fm/test"], workers) == local
    assert digest(f"{web.http}/fm/test/", workers) == local
    after = feeder.storage_stats()
    assert after["requests"] > before["requests"] and after["bytes"] > before["bytes"]
    assert after["failures"] == before["failures"]


def test_train_from_s3_matches_local_disk(aws_env, sets, uploaded):
    local = run(["train", "--train", str(sets / "fm" / "train"), "--test", str(sets / "fm" / "test"), "--epochs", "1"])
    remote = run(["train", "--train", uploaded["fm/train"], "--test", uploaded["fm/test"], "--epochs", "1"])
    accuracy = re.compile(r"Test Accuracy: ([0-9.]+)")
    assert accuracy.search(remote).group(1) == accuracy.search(local).group(1)
    requests = re.search(r"remote data: (\d+) requests, ([0-9.]+) MiB, (\d+) retried, (\d+) failed", remote)
    assert requests and int(requests.group(1)) > 0 and requests.group(4) == "0", remote


def test_missing_bucket_key_and_shard_fail_by_name(aws_env, boto, sets, s3):
    output = run(["inspect", "s3://no-such-bucket-here/x/"], expect=1)
    assert "no such bucket 'no-such-bucket-here'" in output, output
    output = run(["inspect", f"s3://{BUCKET}/nothing/here.parquet"], expect=1)
    assert f"s3://{BUCKET}/nothing/here.parquet" in output and "no such" in output, output
    vanished = upload(boto, sets / "fm" / "test", "vanished")
    boto.delete_object(Bucket=BUCKET, Key="vanished/part-00002.parquet")
    output = run(["inspect", vanished], expect=1)
    assert f"{vanished}part-00002.parquet: listed in index.json but missing" in output, output


def test_access_denied_says_the_servers_reason(aws_env, web):
    # A server that denies everything, as S3 does: 403 with its XML reason.
    endpoint = f"{web.http}/deny"
    output = run(["inspect", f"s3://{BUCKET}/fm/test/part-00000.parquet", "--s3-endpoint", endpoint], expect=1)
    assert "HTTP 403 AccessDenied: Access Denied by the test" in output, output
    assert "unsigned" not in output
    output = run(["inspect", f"s3://{BUCKET}/fm/test/part-00000.parquet", "--s3-endpoint", endpoint, "--s3-anonymous"],
                 expect=1)
    assert "unsigned" in output, output


def test_listing_pages_past_a_thousand_objects(aws_env, boto, tmp_path):
    from PIL import Image
    folder = tmp_path / "many"
    for label, count in (("a", 1003), ("b", 2)):
        (folder / label).mkdir(parents=True)
        for i in range(count):
            Image.new("L", (4, 4), i % 256).save(folder / label / f"{i:05d}.png")
    url = upload(boto, folder, "many")
    # ListObjectsV2 gives at most 1,000 keys a page: the class folder takes two.
    page = boto.list_objects_v2(Bucket=BUCKET, Prefix="many/a/")
    assert page["IsTruncated"] and page["KeyCount"] == 1000
    loader = feeder.DataLoader(url, batch_size=100, image_size=4, channels=1)
    labels = [int(label) for _, batch in loader for label in batch]
    assert len(labels) == 1005 and labels.count(0) == 1003 and labels.count(1) == 2


@pytest.mark.skipif(not os.path.exists("/usr/lib/nginx/modules/ngx_http_lua_module.so"),
                    reason="needs libnginx-mod-http-lua")
@pytest.mark.parametrize("location", ["flaky", "reset", "slow"])
def test_faults_and_latency_give_the_same_batches(aws_env, sets, web, location):
    local = digest(str(sets / "fm" / "test"), 2)
    before = feeder.storage_stats()
    assert digest(f"{web.http}/{location}/fm/test/", 2) == local
    after = feeder.storage_stats()
    if location != "slow":
        assert after["retries"] > before["retries"], (before, after)
    assert after["failures"] == before["failures"]


def test_permanent_failure_gives_up_within_the_bound(aws_env, s3):
    # Nothing listens on this port: refused connections are retried, then given up, in time.
    from conftest import free_port
    port = free_port()
    start = time.monotonic()
    output = run(["inspect", f"http://127.0.0.1:{port}/fm/test/part-00000.parquet", "--max-retries", "3",
                  "--retry-seconds", "5"], expect=1)
    assert time.monotonic() - start < 30
    assert f"http://127.0.0.1:{port}/fm/test/part-00000.parquet" in output and "gave up after" in output, output


def test_server_restarted_mid_epoch(aws_env, sets, uploaded, s3):
    local = digest(str(sets / "fm" / "test"), 2, budget="6MB")

    def restart():
        time.sleep(0.3)
        s3.stop()
        time.sleep(1.0)
        s3.start()

    thread = threading.Thread(target=restart)
    before = feeder.storage_stats()
    thread.start()
    try:
        remote = digest(uploaded["fm/test"], 2, budget="6MB")
    finally:
        thread.join(timeout=60)
    assert remote == local
    assert feeder.storage_stats()["failures"] == before["failures"]


def test_signatures_match_botocore(aws_env, web, sets, tmp_path):
    """feeder's requests as nginx received them, signed again by botocore's own S3 signer."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    # nginx serves <root>/<bucket>/<key> path-style and logs each request's signed parts.
    (sets / BUCKET).mkdir(exist_ok=True)
    key_dir = sets / BUCKET / "sig check+x"
    key_dir.mkdir(exist_ok=True)
    (key_dir / "part-00000.parquet").write_bytes((sets / "fm" / "test" / "part-00000.parquet").read_bytes())
    log = web.work / "signed.log"
    run(["inspect", f"s3://{BUCKET}/sig check+x/part-00000.parquet", "--s3-endpoint", f"{web.http}/signed"])
    lines = [line.split("|") for line in log.read_text().splitlines() if line]
    assert lines
    auth = S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), "s3", "us-east-1")
    for method, uri, host, amz_date, payload, token, authorization in lines:
        request = AWSRequest(method=method, url=f"http://{host}{uri}",
                             headers={"X-Amz-Date": amz_date, "X-Amz-Content-SHA256": payload,
                                      "X-Amz-Security-Token": token})
        request.context["timestamp"] = amz_date
        canonical = auth.canonical_request(request)
        signature = auth.signature(auth.string_to_sign(request, canonical), request)
        assert authorization.endswith("Signature=" + signature), (uri, authorization, canonical)
        assert "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token" in authorization


def keys(boto, prefix):
    pages = boto.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(item["Key"][len(prefix):] for page in pages for item in page.get("Contents", []))


def test_convert_writes_a_set_to_s3(aws_env, boto, sets, tmp_path):
    source = f"{FASHION_MNIST}/t10k-images-idx3-ubyte.gz"
    local = fingerprint(run(["inspect", str(sets / "fm" / "test")]))
    run(["convert", source, f"s3://{BUCKET}/written/rows/", "--shard-rows", "2500"])
    assert keys(boto, "written/rows/") == ["index.json"] + [f"part-0000{i}.parquet" for i in range(4)]
    assert fingerprint(run(["inspect", f"s3://{BUCKET}/written/rows/"])) == local
    # A target size: the first shard is written under a temporary name and renamed (copied) once
    # the names are known.
    run(["convert", source, str(tmp_path / "sized"), "--shard-size", "2MB"])
    run(["convert", source, f"s3://{BUCKET}/written/sized/", "--shard-size", "2MB"])
    assert keys(boto, "written/sized/") == sorted(p.name for p in (tmp_path / "sized").iterdir())
    assert fingerprint(run(["inspect", f"s3://{BUCKET}/written/sized/"])) == fingerprint(run(["inspect", str(tmp_path / "sized")]))
    # A shard larger than a part (16 MiB) goes up as a multipart upload.
    run(["convert", f"{FASHION_MNIST}/train-images-idx3-ubyte.gz", f"s3://{BUCKET}/written/big/", "--shard-rows",
         "60000", "--codec", "none"])
    head = boto.head_object(Bucket=BUCKET, Key="written/big/part-00000.parquet")
    assert head["ContentLength"] > 40 << 20
    assert "rows: 60000" in run(["inspect", f"s3://{BUCKET}/written/big/part-00000.parquet"])
    # A prefix holding a set already is refused.
    output = run(["convert", source, f"s3://{BUCKET}/written/rows/", "--shard-rows", "2500"], expect=2)
    assert "already holds index.json" in output


def test_interrupted_convert_to_s3_leaves_nothing(aws_env, boto):
    import signal
    process = subprocess.Popen([FEEDER, "convert", f"{FASHION_MNIST}/train-images-idx3-ubyte.gz",
                                f"s3://{BUCKET}/written/cut/", "--shard-rows", "200"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    # Until the marker and a shard are there: a reader meanwhile refuses the prefix.
    while not any(k.endswith(".parquet") for k in keys(boto, "written/cut/")):
        assert process.poll() is None and time.monotonic() < deadline, "convert ended before a shard was written"
        time.sleep(0.05)
    output = run(["inspect", f"s3://{BUCKET}/written/cut/"], expect=1)
    assert "has not finished writing" in output, output
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert SECRET_KEY not in out + err
    assert keys(boto, "written/cut/") == []


def image_sets(root):
    """The Python tests' small image set as a folder, as tar shards and as encoded-image Parquet."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
    from image_set import write_folder
    from test_image_tars import write_tars
    write_folder(root / "folder")
    write_tars(root / "tars")
    subprocess.run([FEEDER, "convert", str(root / "folder"), str(root / "encoded") + "/"], check=True,
                   capture_output=True, timeout=300)
    return {name: root / name for name in ("folder", "tars", "encoded")}


@pytest.mark.parametrize("kind", ["folder", "tars", "encoded"])
def test_image_sets_from_s3_are_those_of_local_disk(aws_env, boto, tmp_path, kind):
    local = image_sets(tmp_path)[kind]
    url = upload(boto, local, f"images-{kind}")

    def epoch(source):
        loader = feeder.DataLoader(source, batch_size=7, shuffle=True, num_workers=2, seed=3, image_size=16)
        return [(x.clone(), y.clone()) for x, y in loader]

    expected = epoch(str(local))
    before = feeder.storage_stats()
    got = epoch(url)
    requests = feeder.storage_stats()["requests"] - before["requests"]
    assert len(got) == len(expected) > 0
    for (x, y), (ex, ey) in zip(got, expected):
        assert torch.equal(x, ex) and torch.equal(y, ey)
    if kind == "folder":
        # The listing's sizes and ETags are taken as listed: one GET a file (no HEAD to list it,
        # none to open it), and a few listings.
        files = [p for p in local.rglob("*") if p.is_file()]
        assert len(files) <= requests <= len(files) + 16, (requests, len(files))


@pytest.mark.skipif(not os.path.exists("/usr/lib/nginx/modules/ngx_http_lua_module.so"),
                    reason="needs libnginx-mod-http-lua")
def test_a_new_epoch_a_restore_and_a_destroyed_loader_give_up_stalled_requests_within_a_second(aws_env, sets, web):
    """A server that stops answering (8 s a request) holds no one up: a new epoch or a restore
    gives up the reads ahead for another epoch and the old epoch's reads, a destroyed loader all of
    its own, each within a second (libcurl asks once a second)."""
    switch = sets / "stall-switch"
    url = f"{web.http}/stall/fm/test/"
    options = dict(batch_size=200, shuffle=True, num_workers=2, seed=1, memory_budget="7MB")

    def within(seconds, action):
        start = time.monotonic()
        action()
        assert time.monotonic() - start < seconds

    saver = feeder.DataLoader(f"{web.http}/fm/test/", **options)  # the same set without the delay
    saver.set_epoch(2)
    iterator = iter(saver)
    next(iterator), next(iterator)
    state = saver.state_dict()
    del iterator, saver
    try:
        loaders = [feeder.DataLoader(url, **options)]
        switch.touch()  # the first window's reads ahead are in the server's first 0.1 s: they stall
        within(2.5, lambda: loaders[0].set_epoch(3) or iter(loaders[0]))  # not the epoch read ahead
        time.sleep(0.5)
        within(2.5, lambda: loaders[0].set_epoch(4) or iter(loaders[0]))  # epoch 3's reads wait
        time.sleep(0.5)
        within(2.5, loaders.clear)  # destroyed
        switch.unlink()
        loaders = [feeder.DataLoader(url, **options)]
        switch.touch()
        within(2.5, lambda: loaders[0].load_state_dict(state) or iter(loaders[0]))  # restored
        within(2.5, loaders.clear)
    finally:
        switch.unlink(missing_ok=True)


def test_an_encoded_image_set_over_plain_http_is_read_through_its_index(aws_env, sets, web):
    """A web server has no listing: feeder convert's index.json lists an encoded set's shards, so
    its directory URL reads as the local directory does."""
    local = image_sets(sets / "http-images")["encoded"]
    assert (local / "index.json").is_file()

    def epoch(source):
        loader = feeder.DataLoader(source, batch_size=7, shuffle=True, num_workers=2, seed=3, image_size=16)
        return [(x.clone(), y.clone()) for x, y in loader]

    expected = epoch(str(local))
    got = epoch(f"{web.http}/http-images/encoded/")
    assert len(got) == len(expected) > 0
    for (x, y), (ex, ey) in zip(got, expected):
        assert torch.equal(x, ex) and torch.equal(y, ey)
    assert "indexed by index.json" in run(["inspect", f"{web.http}/http-images/encoded/"])


def test_an_object_replaced_while_read_fails_by_name(aws_env, sets, web):
    import shutil
    changing = sets / "changing"
    shutil.copytree(sets / "fm" / "test", changing)
    loader = feeder.DataLoader(f"{web.http}/changing/", batch_size=100, shuffle=False, memory_budget="6MB")
    iterator = iter(loader)
    next(iterator)
    # Same size, other bytes, a new modification time: another ETag.
    shard = changing / "part-00003.parquet"
    data = bytearray(shard.read_bytes())
    data[1000:1100] = bytes(100)
    time.sleep(1.1)
    shard.write_bytes(bytes(data))
    with pytest.raises(feeder.DataError, match=r"part-00003\.parquet(: row group \d+)?: changed since it was opened"):
        for _ in iterator:
            pass


@pytest.mark.skipif(not os.path.exists("/usr/lib/nginx/modules/ngx_http_lua_module.so"),
                    reason="needs libnginx-mod-http-lua")
def test_region_redirect_is_followed(aws_env, sets, web):
    bucket_dir = sets / BUCKET / "fm" / "test"
    bucket_dir.mkdir(parents=True, exist_ok=True)
    (bucket_dir / "part-00000.parquet").write_bytes((sets / "fm" / "test" / "part-00000.parquet").read_bytes())
    output = run(["inspect", f"s3://{BUCKET}/fm/test/part-00000.parquet", "--s3-endpoint", f"{web.http}/region",
                  "--s3-region", "us-east-1"])
    assert "rows: 2500" in output


def test_presigned_url_refused_without_its_signature(aws_env, web):
    output = run(["inspect", f"{web.http}/fm/test/part-00000.parquet?X-Amz-Signature=abcdef123456"], expect=1)
    assert "presigned" in output and "abcdef123456" not in output, output


def test_state_holds_no_secret_and_resumes_with_other_credentials(aws_env, uploaded, monkeypatch):
    loader = feeder.DataLoader(uploaded["fm/test"], batch_size=200, shuffle=True, seed=2, memory_budget="7MB")
    iterator = iter(loader)
    for _ in range(3):
        next(iterator)
    state = loader.state_dict()
    assert SECRET_KEY not in repr(state) and SESSION_TOKEN not in repr(state)
    rest = [labels.clone() for _, labels in iterator]
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "another-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    feeder.set_storage_options()
    resumed = feeder.DataLoader(uploaded["fm/test"], batch_size=200, shuffle=True, seed=2, memory_budget="7MB")
    resumed.load_state_dict(state)
    again = [labels.clone() for _, labels in resumed]
    assert len(again) == len(rest) and all(torch.equal(a, b) for a, b in zip(again, rest))


def moto_server_available():
    return subprocess.run([sys.executable, "-c", "import moto.server"], capture_output=True).returncode == 0


def moto_packaged():
    """Debian 13 on, where setup.sh installs moto's server: there the check runs, or fails."""
    try:
        return int(Path("/etc/debian_version").read_text().split(".")[0]) >= 13
    except (OSError, ValueError):
        return False


# moto's server checks every request's signature once its first few actions (here: making the user
# and its key) are done. Debian 13 packages moto (python3-moto, its server with python3-flask and
# python3-flask-cors; setup.sh installs them there), Debian 12 does not. moto_server.py corrects
# moto's check for werkzeug 3's decoded query (see there): boto3's own listing is the control.
@pytest.mark.skipif(not moto_server_available() and not moto_packaged(),
                    reason="needs moto's server (Debian 13: python3-moto, python3-flask, python3-flask-cors)")
def test_signatures_verified_by_a_server_that_checks_them(sets, tmp_path, monkeypatch):
    import boto3
    from botocore.config import Config
    from conftest import free_port, stop, wait_for_port
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, str(Path(__file__).resolve().parent / "moto_server.py"), "-H",
                               "127.0.0.1", "-p", str(port)],
                              env=dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, server, "moto")
        plain = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup",
                     aws_secret_access_key="setup")
        iam = boto3.client("iam", **plain)
        iam.create_user(UserName="reader")
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        iam.put_user_policy(UserName="reader", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        # From here every request is checked: boto3's, then feeder's.
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"],
                          config=Config(s3={"addressing_style": "path"}))
        s3.create_bucket(Bucket="checked")
        for shard in sorted((sets / "fm" / "test").iterdir()):
            s3.upload_file(str(shard), "checked", f"fm/{shard.name}")
        listed = s3.list_objects_v2(Bucket="checked", Prefix="fm/", Delimiter="/")
        assert len(listed["Contents"]) == 5  # botocore's listing, checked by the same server
        for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        local = fingerprint(run(["inspect", str(sets / "fm" / "test")]))
        assert fingerprint(run(["inspect", "s3://checked/fm/"])) == local
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        output = run(["inspect", "s3://checked/fm/"], expect=1)
        assert "HTTP 403" in output and "not-the-secret" not in output, output
    finally:
        stop(server)


def epochs_of(source, epochs, cache=None, **kwargs):
    """Each epoch's batches hashed, with what remote reads cost in each (the first with opening the
    set): [(digest, stats delta)]."""
    before = feeder.storage_stats()
    loader = feeder.DataLoader(source, batch_size=200, shuffle=True, num_workers=2, seed=11, memory_budget="7MB",
                               **kwargs)
    out = []
    for epoch in range(epochs):
        if epoch > 0:
            before = feeder.storage_stats()
        h = hashlib.sha256()
        for images, labels in loader:
            h.update(images.numpy().tobytes())
            h.update(labels.numpy().tobytes())
        after = feeder.storage_stats()
        out.append((h.hexdigest(), {key: after[key] - before[key] for key in after}))
    return out


@pytest.mark.parametrize("where", ["s3", "http"])
def test_with_a_cache_dir_the_second_epoch_reads_no_data(aws_env, sets, uploaded, web, tmp_path, where):
    local = [d for d, _ in epochs_of(str(sets / "fm" / "test"), 2)]
    source = uploaded["fm/test"] if where == "s3" else f"{web.http}/fm/test/"
    feeder.set_storage_options(cache_dir=tmp_path / "cache")
    (first, spent1), (second, spent2) = epochs_of(source, 2)
    assert [first, second] == local
    assert spent1["bytes"] > 0
    # No request at all: every byte from the disk.
    assert spent2["requests"] == 0 and spent2["bytes"] == 0 and spent2["cache_bytes"] > 0, spent2
    # Another run (another loader) on the same directory learns the set again (the listing, the
    # index, each shard's size and ETag: a few KiB) and reads none of its 8 MiB of data.
    (again, spent3), = epochs_of(source, 1)
    assert again == local[0] and spent3["bytes"] < 16 << 10 and spent3["cache_bytes"] > 0, spent3
    blocks = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.parent.parent.name == "blocks"]
    assert blocks and not [p for p in blocks if p.name.startswith(".tmp-")]


def test_train_with_a_cache_dir_prints_what_the_cache_served(aws_env, uploaded, tmp_path):
    output = run(["train", "--train", uploaded["fm/train"], "--test", uploaded["fm/test"], "--epochs", "2", "--memory-budget", "48MB",
                  "--cache-dir", str(tmp_path / "cache"), "--report-json", str(tmp_path / "report.json")])
    lines = re.findall(r"remote data: (\d+) requests, ([0-9.]+) MiB, (\d+) retried, (\d+) failed(?:; ([0-9.]+) MiB from the cache)?",
                       output)
    assert len(lines) == 2, output
    assert float(lines[0][1]) > 0 and float(lines[1][1]) == 0 and float(lines[1][4] or 0) > 0, output
    epochs = json.loads((tmp_path / "report.json").read_text())["epochs"]
    assert epochs[0]["remote"]["bytes"] > 0 and epochs[0]["remote"]["failures"] == 0
    assert epochs[1]["remote"]["requests"] == 0 and epochs[1]["remote"]["cache_bytes"] > 0
    output = run(["train", "--train", uploaded["fm/test"], "--test", uploaded["fm/test"], "--epochs", "1", "--cache-limit", "1GB"], expect=2)
    assert "--cache-limit: needs --cache-dir" in output, output
    output = run(["train", "--train", uploaded["fm/test"], "--test", uploaded["fm/test"], "--epochs", "1", "--cache-dir", str(tmp_path / "c"),
                  "--cache-limit", "lots"], expect=2)
    assert "--cache-limit" in output and "lots" in output, output


CACHE_READER = """
import hashlib, json, sys, feeder
feeder.set_storage_options(cache_dir=sys.argv[2], cache_limit=sys.argv[3])
loader = feeder.DataLoader(sys.argv[1], batch_size=200, shuffle=True, num_workers=2, seed=11, memory_budget="7MB")
digests = []
for epoch in range(2):
    h = hashlib.sha256()
    for images, labels in loader:
        h.update(images.numpy().tobytes())
        h.update(labels.numpy().tobytes())
    digests.append(h.hexdigest())
print(json.dumps(digests))
"""


def test_processes_sharing_a_cache_dir_within_its_limit(aws_env, sets, uploaded, tmp_path):
    local = [d for d, _ in epochs_of(str(sets / "fm" / "test"), 2)]
    cache = tmp_path / "cache"
    limit = 3 << 20  # a fraction of the set (about 8 MiB): blocks evicted while others read them
    processes = [subprocess.Popen([sys.executable, "-c", CACHE_READER, uploaded["fm/test"], str(cache), str(limit)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        assert json.loads(out) == local
    blocks = [p for p in (cache / "blocks").rglob("*") if p.is_file()]
    assert not [p for p in blocks if p.name.startswith(".tmp-")]
    # Within the limit but for the blocks written since each process last counted (a few each).
    assert sum(p.stat().st_size for p in blocks) <= limit + 3 * 2 * (1 << 20)


@pytest.mark.parametrize("kind", ["folder", "tars"])
def test_image_sets_read_again_from_the_cache(aws_env, boto, tmp_path, kind):
    local = image_sets(tmp_path)[kind]
    url = upload(boto, local, f"cached-{kind}")
    feeder.set_storage_options(cache_dir=tmp_path / "cache")

    def epoch(source):
        loader = feeder.DataLoader(source, batch_size=7, shuffle=True, num_workers=2, seed=3, image_size=16)
        return [(x.clone(), y.clone()) for x, y in loader]

    expected = epoch(str(local))
    spent = []
    for _ in range(2):
        before = feeder.storage_stats()
        got = epoch(url)
        spent.append(feeder.storage_stats()["bytes"] - before["bytes"])
        assert len(got) == len(expected) > 0
        assert all(torch.equal(x, ex) and torch.equal(y, ey) for (x, y), (ex, ey) in zip(got, expected))
    # Both list the prefix (the same XML); the first reads each file once, the second none.
    assert spent[0] - spent[1] == sum(p.stat().st_size for p in local.rglob("*") if p.is_file()), spent


def test_the_first_streamed_epoch_finds_each_row_groups_pages_once(aws_env, sets, web):
    """Finding a row group's pages reads its chunks' headers, over a network the chunks whole. The
    readers that need a row group at once wait for one of them to find its pages, instead of each
    reading it again: opening and streaming a set of one row group in order read it about twice
    (its pages, its data), where it had been read nearly five times."""
    one = sets / "one-row-group"
    if not (one / "index.json").exists():
        feeder.convert(f"{FASHION_MNIST}/t10k-images-idx3-ubyte.gz", str(one) + "/", shard_rows=10000,
                       row_group_size=10000)
    set_bytes = sum(p.stat().st_size for p in one.glob("*.parquet"))
    before = feeder.storage_stats()["bytes"]
    loader = feeder.DataLoader(f"{web.http}/one-row-group/", batch_size=100, num_workers=2, memory_budget="6MB")
    assert loader.streaming
    for _ in loader:
        pass
    read = feeder.storage_stats()["bytes"] - before
    assert read < 3 * set_bytes, (read, set_bytes)


def test_a_streamed_epoch_reads_each_small_column_in_one_request(aws_env, sets, web):
    """Pieces of a row group scattered through a window: their pixels are a request each, but the
    label column's pages (a few bytes each) come with one request per read, not one a piece."""
    log = web.work / "counted.log"
    loader = feeder.DataLoader(f"{web.http}/counted/fm/train/", batch_size=200, shuffle=True, num_workers=2,
                               seed=11, memory_budget="7MB")
    local = feeder.DataLoader(str(sets / "fm" / "train"), batch_size=200, shuffle=True, num_workers=2,
                              seed=11, memory_budget="7MB")
    for _ in local:  # both at their second epoch below
        pass
    for _ in loader:  # the first grows the readers' buffers
        pass
    start = log.stat().st_size if log.exists() else 0
    for (x, y), (lx, ly) in zip(loader, local):
        assert torch.equal(x, lx) and torch.equal(y, ly)
    with open(log) as f:
        f.seek(start)
        sizes = [int(line.split()[1]) for line in f if line.startswith("GET ")]
    small = [size for size in sizes if size < 4096]
    assert len(sizes) > 100, sizes  # a streamed epoch of many pieces
    assert len(small) <= len(sizes) // 20, (len(small), len(sizes))


def test_virtual_hosted_addressing(aws_env, sets, web):
    """The bucket in the host name (bucket.endpoint/key), as AWS's own endpoints take it."""
    bucket = sets / "hosted-bucket" / "fm"
    bucket.mkdir(parents=True, exist_ok=True)
    shutil.copy(sets / "fm" / "test" / "part-00001.parquet", bucket / "part-00001.parquet")
    output = run(["inspect", "s3://hosted-bucket/fm/part-00001.parquet", "--s3-endpoint",
                  f"http://localhost:{web.vhost_port}", "--s3-addressing", "virtual"])
    assert "rows: 2500" in output, output
    log = (web.work / "vhost.log").read_text()
    assert "GET hosted-bucket.localhost /fm/part-00001.parquet 200" in log, log


def test_http_proxy_variable_is_followed(aws_env, sets, web, monkeypatch):
    """http_proxy (as libcurl reads it) carries every request; no_proxy exempts a host."""
    log = web.work / "proxy.log"
    start = log.stat().st_size if log.exists() else 0
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{web.proxy_port}")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    local = fingerprint(run(["inspect", str(sets / "fm" / "test")]))
    assert fingerprint(run(["inspect", f"{web.http}/fm/test/"])) == local
    with open(log) as f:
        f.seek(start)
        proxied = f.read()
    assert "/fm/test/index.json 200" in proxied and "/fm/test/part-00000.parquet 206" in proxied, proxied
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    size = log.stat().st_size
    assert fingerprint(run(["inspect", f"{web.http}/fm/test/"])) == local
    assert log.stat().st_size == size


def test_large_pieces_are_read_a_request_each(aws_env, sets, web):
    """piece_size above a megabyte of pixels: each piece's pages come in one request (pieces of
    default size, or reads over a network, take a request a megabyte at most), with the batches of
    the same piece size on local disk, and far fewer requests than the default pieces make."""
    log = web.work / "counted.log"
    options = dict(batch_size=200, shuffle=True, num_workers=2, seed=11, memory_budget="24MB")

    def requests(loader):
        start = log.stat().st_size if log.exists() else 0
        local = feeder.DataLoader(str(sets / "fm" / "train"), **options, **kwargs)
        for (x, y), (lx, ly) in zip(loader, local):
            assert torch.equal(x, lx) and torch.equal(y, ly)
        with open(log) as f:
            f.seek(start)
            return [int(line.split()[1]) for line in f if line.startswith("GET ")]

    kwargs = {"piece_size": "2MiB"}  # 2,647 rows of 792 bytes: 2.07 MB of pixels a piece
    large = feeder.DataLoader(f"{web.http}/counted/fm/train/", **options, **kwargs)
    assert large.streaming
    sizes = requests(large)
    pixel_reads = [size for size in sizes if size > 100_000]
    assert len(pixel_reads) <= 60_000 // 2647 + 4 * 6, len(pixel_reads)  # a piece, or its part in a row group
    assert max(pixel_reads) > 1 << 20, max(pixel_reads)
    kwargs = {}
    default = requests(feeder.DataLoader(f"{web.http}/counted/fm/train/", **options))
    assert len(sizes) * 3 < len(default), (len(sizes), len(default))
