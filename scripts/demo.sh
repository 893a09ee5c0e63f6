#!/usr/bin/env bash
# The main job of the README: installs dependencies, builds, and runs the built-in default task.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/scripts/setup.sh" "$here/build"
exec "$here/build/grpo" --help
