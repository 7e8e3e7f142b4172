#!/usr/bin/env python3
"""The article's Python training loop on feeder.DataLoader, against the same loop on the article's
Dataset v2 + torch DataLoader and against `feeder train` (C++), in the same run.

For each precision (fp32; bf16 autocast + channels-last) the pipelines run --repeats times,
alternating, each in its own process for --epochs epochs (SimpleCNN, Adam, batch 512, 2 threads).
An epoch's time is its train + test pass; a pipeline's figure is the median over all its epochs,
its data wait the largest share of any training pass. Ratios are against `feeder train` at the same
precision (goal: the Python loop on feeder within 10%) and against the torch DataLoader. The
Python loop runs the article's SimpleCNN and, in one more row, the model as `feeder train` runs it
(each max-pool before its ReLU: the same function, less work). Every process starts with the
environment `feeder train` gives itself (feeder.recommended_environment: threads, malloc thresholds).

    build/venv/bin/python3 bench/python/train_bench.py [--epochs 3] [--repeats 3] [--json FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ARTICLE = os.path.join(ROOT, "bench", "reference", "article_pipeline.py")


def command(pipeline, precision, epochs, threads, report, feeder_binary):
    bf16 = precision == "bf16"
    if pipeline == "feeder train (C++)":
        return [feeder_binary, "train", "--epochs", str(epochs), "--precision", precision,
                "--channels-last", "on" if bf16 else "off", "--workers", "1", "--threads", str(threads),
                "--report-json", report]
    loader = ["--loader", "feeder", "--num-workers", "1"] if "feeder.DataLoader" in pipeline else \
        ["--loader", "torch", "--dataset", "v2", "--num-workers", "0"]
    model = ["--pool-first"] if "pool-first" in pipeline else []
    return [sys.executable, ARTICLE, *loader, *model, "--epochs", str(epochs), "--precision", precision,
            "--threads", str(threads), "--json", report] + (["--channels-last"] if bf16 else [])


# feeder train runs SimpleCNN with each max-pool before its ReLU (the same function, less work); the
# pool-first row runs the Python loop on that model too, so that only the loop and loader differ.
PIPELINES = ["feeder train (C++)", "Python loop, feeder.DataLoader", "Python loop, feeder.DataLoader, pool-first model",
             "Python loop, Dataset v2 + torch DataLoader"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--feeder", default=os.path.join(ROOT, "build", "feeder"), help="the feeder executable")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    # The Python loops get the process settings `feeder train` gives itself (glibc's malloc
    # thresholds; threads through --threads), so that the rows differ only in language and loader.
    import feeder
    environment = {**os.environ, **feeder.recommended_environment(args.threads)}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for precision in args.precisions.split(","):
            for repeat in range(args.repeats):
                order = PIPELINES if repeat % 2 == 0 else PIPELINES[::-1]
                for pipeline in order:
                    report = os.path.join(tmp, "run.json")
                    cmd = command(pipeline, precision, args.epochs, args.threads, report, args.feeder)
                    print(f"[{precision} {repeat + 1}/{args.repeats}] {pipeline}", file=sys.stderr, flush=True)
                    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=environment)
                    with open(report) as f:
                        run = json.load(f)
                    entry = results.setdefault(precision, {}).setdefault(
                        pipeline, {"epoch_seconds": [], "wait_shares": [], "accuracies": []})
                    for epoch in run["epochs"]:
                        entry["epoch_seconds"].append(epoch["train_seconds"] + epoch["test_seconds"])
                        entry["wait_shares"].append(epoch["data_wait_seconds"] / epoch["train_seconds"])
                    entry["accuracies"].append(run["summary"]["final_accuracy"])

    print(f"SimpleCNN on FashionMNIST, batch 512, {args.threads} threads; median epoch (train + test) over "
          f"{args.repeats} runs x {args.epochs} epochs, alternated\n")
    print("| precision | pipeline | epoch s (median) | range | vs feeder train | vs torch DataLoader | "
          "data wait (largest) | accuracy after the last epoch |")
    print("|---|---|---|---|---|---|---|---|")
    for precision, pipelines in results.items():
        cpp = statistics.median(pipelines[PIPELINES[0]]["epoch_seconds"])
        torch_loop = statistics.median(pipelines[PIPELINES[-1]]["epoch_seconds"])
        for pipeline in PIPELINES:
            entry = pipelines[pipeline]
            seconds = statistics.median(entry["epoch_seconds"])
            print(f"| {precision} | {pipeline} | {seconds:.2f} | {min(entry['epoch_seconds']):.2f}-"
                  f"{max(entry['epoch_seconds']):.2f} | {seconds / cpp:.3f}x | {torch_loop / seconds:.2f}x faster | "
                  f"{100 * max(entry['wait_shares']):.2f}% | "
                  f"{statistics.mean(entry['accuracies']):.4f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
