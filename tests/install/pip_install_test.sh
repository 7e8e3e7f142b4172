#!/usr/bin/env bash
# `pip install` of the Python package as a user does it, offline (no package index here): a fresh
# virtual environment that sees the system's packages (Debian's torch), `pip install
# --no-build-isolation` of a copy of the source tree, then, from another directory and with the copy
# deleted, `import feeder` and a training loop on FashionMNIST; the installed extension links no
# LibTorch; `pip uninstall` leaves the environment as it was. With python3-build present, a wheel too.
# usage: pip_install_test.sh SOURCE_DIR WORK_DIR [PYTHON]
# WORK_DIR is emptied first and kept afterwards.
set -euo pipefail
source_dir=$1 work=$2 python=${3:-/usr/bin/python3}

fail() {
  echo "pip_install_test: $*" >&2
  exit 1
}

rm -rf "$work"
mkdir -p "$work/elsewhere"
# A copy of the source tree without its build folders, node_modules or .git (a user's clone,
# before any build): no build outputs come along.
copy_source() {
  mkdir -p "$1"
  tar -C "$source_dir" --exclude='./build*' --exclude='./.git' --exclude='node_modules' --exclude='./dist' \
    --exclude='*.egg-info' --exclude='__pycache__' -cf - . | tar -C "$1" -xf -
}
copy_source "$work/src"

"$python" -m venv --system-site-packages "$work/venv"
venv_python=$work/venv/bin/python3
site=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
before=$(cd "$site" && find . | sort)

"$work/venv/bin/pip" install --no-build-isolation --no-index "$work/src" >"$work/pip-install.log" 2>&1 ||
  fail "pip install failed (log: $work/pip-install.log): $(tail -n 20 "$work/pip-install.log")"
rm -rf "$work/src"  # nothing of the source tree or its build is needed from here on

extension=$(ls "$site"/feeder/_feeder*.so 2>/dev/null | head -n 1)
[ -n "$extension" ] || fail "no extension _feeder*.so in $site/feeder"
if ldd "$extension" | grep -i 'torch'; then fail "the installed extension links LibTorch (above)"; fi

cd "$work/elsewhere"
out=$("$venv_python" - <<'PY'
import os, sys
import torch
import feeder

assert os.path.realpath(feeder.__file__).startswith(os.path.realpath(sys.prefix)), feeder.__file__
data = "/usr/share/datasets/fashion-mnist"
train = feeder.DataLoader(f"{data}/train-images-idx3-ubyte.gz", batch_size=256, shuffle=True, num_workers=2)
test = feeder.DataLoader(f"{data}/t10k-images-idx3-ubyte.gz", batch_size=1000, shuffle=False, num_workers=1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    train.set_epoch(epoch)
    for images, labels in train:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
correct = 0
with torch.no_grad():
    for images, labels in test:
        correct += (model(images).argmax(1) == labels).sum().item()
print(f"feeder {feeder.__version__} from {os.path.dirname(feeder.__file__)}: torch {torch.__version__}, "
      f"accuracy {correct / 10000:.4f}")
assert correct / 10000 > 0.75, correct
PY
) || fail "the training loop failed: $out"
echo "$out"

"$work/venv/bin/pip" uninstall -y feeder >"$work/pip-uninstall.log" 2>&1 || fail "pip uninstall failed: $(cat "$work/pip-uninstall.log")"
after=$(cd "$site" && find . -not -path '*/__pycache__*' | sort)
before=$(printf '%s\n' "$before" | grep -v '__pycache__' || true)
if [ "$before" != "$after" ]; then
  fail "pip uninstall left files behind: $(diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | head -n 20)"
fi
echo "pip uninstall: $site as before"

if "$python" -c 'import build' 2>/dev/null; then
  copy_source "$work/src"
  (cd "$work/src" && "$python" -m build --wheel --no-isolation --skip-dependency-check --outdir "$work/dist" >"$work/wheel.log" 2>&1) ||
    fail "python3 -m build --wheel failed (log: $work/wheel.log): $(tail -n 20 "$work/wheel.log")"
  wheel=$(ls "$work"/dist/feeder-*.whl) || fail "no wheel in $work/dist"
  listing=$("$python" -m zipfile -l "$wheel")
  [[ "$listing" == *"feeder/__init__.py"* && "$listing" == *"feeder/_feeder"* ]] ||
    fail "the wheel lacks the package or its extension: $listing"
  echo "wheel: $(basename "$wheel")"
fi
echo "pip install: passed"
