#!/usr/bin/env bash
# Installs redis-server (Debian's package) for the differential test
# crates/batchkv-server/tests/redis_diff.rs. Never fails: when redis-server
# cannot be installed it says so and exits 0, and the test then reports
# itself as skipped.
set -u

if command -v redis-server >/dev/null 2>&1; then
    echo "install-redis: $(redis-server --version)"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-redis: apt-get not found; redis-server NOT installed (redis_diff will be skipped)"
    exit 0
fi

# Root runs apt-get directly; anyone else needs sudo without a password.
if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    echo "install-redis: not root and no passwordless sudo; redis-server NOT installed (redis_diff will be skipped)"
    exit 0
fi

install() {
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server
}

# The package lists may be missing or stale: update once if the first
# attempt fails.
if ! install && ! { "${SUDO[@]}" apt-get update && install; }; then
    echo "install-redis: apt-get install redis-server failed; redis_diff will be skipped"
    exit 0
fi

if command -v redis-server >/dev/null 2>&1; then
    echo "install-redis: installed $(redis-server --version)"
else
    echo "install-redis: redis-server still not on PATH after installing; redis_diff will be skipped"
fi
exit 0
