#!/usr/bin/env python3
"""feeder.DataLoader over remote sets against the same sets on local disk, and the loader's reads
against curl downloading the same objects from the same server, in one run.

Servers, started here on loopback (as the tests start them, tests/storage/conftest.py): s3rver, a
real S3 server (Node.js), holding the sets uploaded by boto3; nginx in front of it, adding 25 ms to
every request with Lua's ngx.sleep (a store's time to first byte).

Sets: 8,000 ImageNet-sized JPEGs made as bench/images makes them (Debian's wallpapers, cropped; --images)
as encoded-image Parquet shards (feeder convert, shuffled on write), and a pixel set of 512 MiB (32,000 random
1x128x128 images in 4 shards).

Rows, each the median of --repeats passes, alternated between the rows, each in a process of its
own (its peak RSS is the row's), timing the second epoch (the first opens the set):
  images, training transform (RandomResizedCrop 224 + flip + normalize), 2 workers, streamed
  within a budget of 90% of the set plus the batch buffers: local disk; S3 (s3rver); S3 through
  nginx (the proxy that adds the delay, without it); S3 with 25 ms added to every request; the
  set's directory on nginx over HTTP, without and with 25 ms a request.
  pixels, 2 workers, streamed within 128 MiB plus the batch buffers: local disk; S3 and nginx over
  HTTP, each one's bytes/s against curl's reading every shard from the same server (one curl,
  connections kept alive).
  With cache_dir (emptied before each pass): the 25 ms images row and the S3 pixels row again, their
  second epoch read from the disk cache the first filled.
Each remote row reports requests and MiB per epoch, bytes per request, the CPU time the S3 server
(which shares the machine's cores with the loader) spent in the row's process (two epochs), and the
peak RSS, also above what the process held once torch and feeder were imported, against the budget.

    build/venv/bin/python3 bench/remote/remote_bench.py [--repeats 3] [--work DIR] [--json FILE] [--only ROWS]
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "storage"))
sys.path.insert(0, str(ROOT / "bench" / "images"))

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def child(spec):
    """One row's pass in this process: two epochs, the second timed; prints a JSON line."""
    import feeder
    import torch  # noqa: F401  (its memory is the baseline the loader's is measured above)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    options = dict(batch_size=256, shuffle=True, num_workers=2, memory_budget=spec["budget"], seed=5)
    if spec.get("dtype") == "uint8":
        options["dtype"] = torch.uint8
    if spec.get("piece_size"):
        options["piece_size"] = spec["piece_size"]
    if spec["kind"] == "images":
        options.update(image_size=224, augment="random_resized_crop", normalize=(MEAN, STD), prefetch=2)
    if "endpoint" in spec or "cache_dir" in spec:
        feeder.set_storage_options(endpoint=spec.get("endpoint"), cache_dir=spec.get("cache_dir"))
    loader = feeder.DataLoader(spec["source"], **options)
    epochs = []
    for _ in range(2):
        before = feeder.storage_stats()
        start = time.perf_counter()
        samples = 0
        first = None
        for images, _labels in loader:
            samples += images.shape[0]
            first = first or time.perf_counter() - start
        seconds = time.perf_counter() - start
        spent = {k: feeder.storage_stats()[k] - before[k] for k in before}
        epochs.append({"seconds": seconds, "samples": samples, "first_batch_seconds": first, **spent})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"epochs": epochs, "peak_rss": peak, "baseline_rss": baseline}))


def run_child(spec, env):
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], env=env, capture_output=True,
                         text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"{spec}: failed\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def curl_rate(urls):
    """Bytes/s of one curl downloading every URL in turn, its connection kept alive."""
    start = time.perf_counter()
    out = subprocess.run(["curl", "-s", "-f", "-w", "%{size_download}\\n", *[x for u in urls for x in (u, "-o", "/dev/null")]],
                         capture_output=True, text=True, timeout=600, check=True)
    seconds = time.perf_counter() - start
    return sum(int(line) for line in out.stdout.split()) / seconds


def process_cpu_seconds(pid):
    """User + system CPU time of a process (the S3 server, which shares these cores)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--images", type=int, default=8000)
    parser.add_argument("--work", default=str(ROOT / "build" / "bench-remote"))
    parser.add_argument("--json")
    parser.add_argument("--only", default="", help="only the rows whose names contain this (and their local rows)")
    args = parser.parse_args()
    if args.child:
        return child(json.loads(args.child))

    import boto3
    from botocore.config import Config
    import feeder
    from conftest import ACCESS_KEY, BUCKET, Nginx, S3Server, SECRET_KEY, upload
    from images_bench import build_set

    work = Path(args.work)
    www = work / "www"
    www.mkdir(parents=True, exist_ok=True)
    build_set(str(work / f"wallpapers-{args.images}"), args.images)
    images_name = f"images-{args.images}"
    images = www / images_name
    if not (images / "index.json").exists():  # written last: the set is whole
        shutil.rmtree(images, ignore_errors=True)
        feeder.convert(str(work / f"wallpapers-{args.images}" / "train"), str(images) + "/", shuffle_on_write=0,
                       shard_size="16MB")
    pixels = www / "pixels"
    if not (pixels / "index.json").exists():
        # 32,000 images of 1x128x128 random bytes (lz4 leaves them as they are): 512 MiB in 4 shards.
        import numpy as np
        images_file = work / "pixels-images-idx3-ubyte"
        with open(images_file, "wb") as f:
            f.write(np.array([0x0803, 32000, 128, 128], dtype=">u4").tobytes())
            rng = np.random.default_rng(0)
            for _ in range(32):
                f.write(rng.integers(0, 256, size=(1000, 128, 128), dtype=np.uint8).tobytes())
        with open(work / "pixels-labels-idx1-ubyte", "wb") as f:
            f.write(np.array([0x0801, 32000], dtype=">u4").tobytes())
            f.write((np.arange(32000) % 10).astype(np.uint8).tobytes())
        subprocess.run([str(ROOT / "build" / "feeder"), "convert", str(images_file), str(pixels), "--shard-rows",
                        "8000"], check=True, capture_output=True)
    image_bytes = sum(p.stat().st_size for p in images.glob("*.parquet"))

    s3 = S3Server(work / "s3rver-data")
    s3.start()
    nginx_dir = work / "nginx"
    nginx_dir.mkdir(exist_ok=True)
    web = Nginx(nginx_dir, www, s3_upstream=s3.endpoint)
    web.start()
    try:
        boto = boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}))
        remote = {"images": upload(boto, images, images_name), "pixels": upload(boto, www / "pixels", "pixels")}
        env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
                   AWS_ENDPOINT_URL=s3.endpoint)
        # As bench/images streams them: 90% of the shards, beside the batch buffers the budget also holds
        # (prefetch 2 + 2 of 256 float32 3x224x224 images; the pixel rows: 4 + 2 of 256 float32 1x128x128).
        image_budget = image_bytes * 9 // 10 + 4 * 256 * (3 * 224 * 224 * 4 + 16)
        pixel_budget = (128 << 20) + 6 * 256 * (128 * 128 * 4 + 16)
        large_pieces = {"piece_size": "8MiB", "dtype": "uint8", "local": "pixels: local disk, 8 MiB pieces, uint8"}
        rows = {
            "images: local disk": {"kind": "images", "source": str(images), "budget": image_budget},
            "images: S3 (s3rver)": {"kind": "images", "source": remote["images"], "budget": image_budget},
            # Through the proxy that adds the 25 ms, without them: what the proxy's own CPU costs.
            "images: S3 through nginx": {"kind": "images", "source": remote["images"], "budget": image_budget,
                                         "endpoint": f"{web.http}/s3proxy"},
            "images: S3, 25 ms a request": {"kind": "images", "source": remote["images"], "budget": image_budget,
                                            "endpoint": f"{web.http}/s3slow"},
            # The set's directory URL on nginx itself (its index.json lists the shards): no proxy, and
            # the same with 25 ms added to every request: what the latency costs without s3rver's CPU.
            "images: HTTP (nginx)": {"kind": "images", "source": f"{web.http}/{images_name}/", "budget": image_budget},
            "images: HTTP (nginx), 25 ms a request": {"kind": "images", "source": f"{web.http}/slow/{images_name}/",
                                                      "budget": image_budget},
            "pixels: local disk": {"kind": "pixels", "source": str(pixels), "budget": pixel_budget},
            "pixels: S3 (s3rver)": {"kind": "pixels", "source": remote["pixels"], "budget": pixel_budget},
            # The same reads from nginx (sendfile, a small fraction of s3rver's CPU a request).
            "pixels: HTTP (nginx)": {"kind": "pixels", "source": f"{web.http}/pixels/", "budget": pixel_budget},
            # Pieces of 8 MiB (a request each; a coarser mix) and uint8 batches (no conversion to float).
            "pixels: local disk, 8 MiB pieces, uint8": {"kind": "pixels", "source": str(pixels),
                                                        "budget": pixel_budget, **large_pieces},
            "pixels: S3 (s3rver), 8 MiB pieces, uint8": {"kind": "pixels", "source": remote["pixels"],
                                                         "budget": pixel_budget, **large_pieces},
            "pixels: HTTP (nginx), 8 MiB pieces, uint8": {"kind": "pixels", "source": f"{web.http}/pixels/",
                                                          "budget": pixel_budget, **large_pieces},
            # With a disk cache, emptied before each pass: the timed second epoch reads the disk.
            "images: S3, 25 ms a request, cache_dir": {"kind": "images", "source": remote["images"],
                                                       "budget": image_budget, "endpoint": f"{web.http}/s3slow",
                                                       "cache_dir": str(work / "cache")},
            "pixels: S3 (s3rver), cache_dir": {"kind": "pixels", "source": remote["pixels"], "budget": pixel_budget,
                                               "cache_dir": str(work / "cache")},
        }
        if args.only:
            rows = {name: spec for name, spec in rows.items() if args.only in name or
                    (name.endswith("local disk") and any(args.only in n and n.startswith(spec["kind"]) for n in rows))}
        results = {name: [] for name in rows}
        curl, curl_nginx = [], []
        shard_urls = [f"{s3.endpoint}/{BUCKET}/pixels/{p.name}" for p in sorted(pixels.glob("*.parquet"))]
        nginx_urls = [f"{web.http}/pixels/{p.name}" for p in sorted(pixels.glob("*.parquet"))]
        server_cpu = {name: [] for name in rows}
        for repeat in range(args.repeats):
            for name, spec in rows.items():
                if "cache_dir" in spec:
                    shutil.rmtree(spec["cache_dir"], ignore_errors=True)
                before = process_cpu_seconds(s3.process.pid)
                results[name].append(run_child(spec, env))
                server_cpu[name].append(process_cpu_seconds(s3.process.pid) - before)
            curl.append(curl_rate(shard_urls))
            curl_nginx.append(curl_rate(nginx_urls))
            print(f"pass {repeat + 1}/{args.repeats} done", flush=True)
    finally:
        web.stop()
        s3.stop()

    def rate(result):
        epoch = result["epochs"][1]
        return epoch["samples"] / epoch["seconds"]

    print(f"\n{cpu_name()}, {os.cpu_count()} cores; medians of {args.repeats} alternated passes (second epochs)")
    print(f"images: {args.images} JPEGs, {image_bytes / 2**20:.0f} MiB of shards, budget {image_budget / 2**20:.0f} MiB\n")
    print("| row | samples/s | vs local | requests/epoch | MiB/epoch | KiB/request | retries | peak RSS MiB | "
          "over torch's, MiB (budget) | S3 server CPU s/pass | first batch, ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for name, spec in rows.items():
        local = spec.get("local") or next(n for n in rows if n.startswith(spec["kind"]) and "local" in n)
        median = statistics.median(rate(r) for r in results[name])
        ratio = statistics.median(rate(r) / rate(l) for r, l in zip(results[name], results[local]))
        epoch = results[name][-1]["epochs"][1]
        requests, received = epoch["requests"], epoch["bytes"]
        peak = statistics.median(r["peak_rss"] for r in results[name]) / 2**20
        over = statistics.median(r["peak_rss"] - r["baseline_rss"] for r in results[name]) / 2**20
        per_request = f"{received / requests / 1024:.0f}" if requests else "-"
        print(f"| {name} | {median:.0f} | {ratio:.2f} | {requests} | {received / 2**20:.1f} | {per_request} | "
              f"{epoch['retries']} | {peak:.0f} | {over:.0f} ({spec['budget'] / 2**20:.0f}) | "
              f"{statistics.median(server_cpu[name]):.2f} | "
              f"{1000 * statistics.median(r['epochs'][1]['first_batch_seconds'] for r in results[name]):.0f} |")
        summary[name] = {"samples_per_second": median, "vs_local": ratio, "requests": requests, "bytes": received,
                         "peak_rss_mib": peak}
    for name, against, label in (("pixels: S3 (s3rver)", curl, "pixels from S3"),
                                 ("pixels: HTTP (nginx)", curl_nginx, "pixels from nginx"),
                                 ("pixels: S3 (s3rver), 8 MiB pieces, uint8", curl, "pixels from S3, 8 MiB pieces"),
                                 ("pixels: HTTP (nginx), 8 MiB pieces, uint8", curl_nginx,
                                  "pixels from nginx, 8 MiB pieces")):
        if name not in results:
            continue
        loader_rates = [r["epochs"][1]["bytes"] / r["epochs"][1]["seconds"] for r in results[name]]
        ratios = [a / c for a, c in zip(loader_rates, against)]
        print(f"{label}: the loader read {statistics.median(loader_rates) / 2**20:.0f} MiB/s, curl "
              f"{statistics.median(against) / 2**20:.0f} MiB/s from the same server: {statistics.median(ratios):.2f}x")
        summary[f"{label} vs curl"] = statistics.median(ratios)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
