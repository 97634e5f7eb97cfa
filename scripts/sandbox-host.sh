#!/usr/bin/env bash
# What the sandbox contract tests need on this host: bubblewrap for NamespaceSandbox, and podman
# (with runc) serving a Docker-compatible API for DockerSandbox, with a test image built here.
#
#   scripts/sandbox-host.sh start    install what is missing (Debian), start the API, build the image
#   scripts/sandbox-host.sh status   say what runs, and print the settings the tests read
#   scripts/sandbox-host.sh stop     stop the API service
#
# Idempotent. Writes nothing outside the repository but what apt installs: podman's storage,
# run state and socket live under .cache/sandbox-host/. The image is imported from a rootfs
# tarball assembled from the busybox-static Debian package; nothing is ever pulled.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state="$root/.cache/sandbox-host"
socket="$state/podman.sock"
image="localhost/psych-sandbox-test:1"
export CONTAINERS_CONF="$root/deploy/podman/containers.conf"
podman_flags=(
    --root "$state/storage" --runroot "$state/run" --tmpdir "$state/tmp"
    --storage-driver vfs --cgroup-manager cgroupfs --runtime runc --events-backend none
)
packages=(bubblewrap podman runc conmon catatonit busybox-static uidmap slirp4netns fuse-overlayfs)

log() { echo "sandbox-host: $*" >&2; }

install_missing() {
    local missing=()
    for package in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        log "missing ${missing[*]} and this is not a Debian-like system: install them yourself"
        exit 2
    fi
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    log "installing ${missing[*]} ..."
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

podman_() { podman "${podman_flags[@]}" "$@"; }

api_up() {
    [ -S "$socket" ] && podman --url "unix://$socket" version >/dev/null 2>&1
}

start_api() {
    api_up && return 0
    mkdir -p "$state/storage" "$state/run" "$state/tmp"
    rm -f "$socket"
    log "starting podman system service on $socket ..."
    # Started in its state folder: conmon leaves files in its working directory (an `oom`
    # mark when a container is killed for memory), which must not land in the checkout.
    (cd "$state" && exec setsid podman "${podman_flags[@]}" system service --time 0 \
        "unix://$socket" >"$state/service.log" 2>&1 </dev/null) &
    echo $! >"$state/service.pid"
    for _ in $(seq 100); do
        api_up && return 0
        sleep 0.1
    done
    log "the podman service did not answer; see $state/service.log"
    tail -n 20 "$state/service.log" >&2 || true
    exit 1
}

build_image() {
    podman_ image exists "$image" && return 0
    local rootfs="$state/rootfs" tarball="$state/rootfs.tar"
    log "assembling the test image's rootfs from busybox-static ..."
    rm -rf "$rootfs"
    mkdir -p "$rootfs"/{bin,etc,tmp,scratch,proc,dev,sys}
    cp /bin/busybox "$rootfs/bin/busybox"
    for applet in $("$rootfs/bin/busybox" --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$rootfs/bin/$applet"
    done
    printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/scratch:/bin/sh\n' \
        >"$rootfs/etc/passwd"
    printf 'root:x:0:\nsandbox:x:1000:\n' >"$rootfs/etc/group"
    chmod 1777 "$rootfs/tmp"
    chown 1000:1000 "$rootfs/scratch"
    tar --numeric-owner -C "$rootfs" -cf "$tarball" .
    podman_ import --quiet --change 'CMD ["/bin/sh"]' "$tarball" "$image" >/dev/null
    rm -rf "$rootfs"
    log "built $image"
}

settings() {
    echo "PSYCH_TEST_DOCKER_HOST=unix://$socket"
    echo "PSYCH_TEST_DOCKER_IMAGE=$image"
    echo "PSYCH_TEST_BWRAP=$(command -v bwrap || echo missing)"
}

case "${1:-status}" in
start)
    install_missing
    start_api
    build_image
    settings
    ;;
status)
    if api_up; then log "podman API: up on $socket"; else log "podman API: down"; fi
    if command -v bwrap >/dev/null 2>&1; then log "bubblewrap: $(bwrap --version)"; else log "bubblewrap: missing"; fi
    settings
    api_up
    ;;
stop)
    if [ -f "$state/service.pid" ]; then
        kill "$(cat "$state/service.pid")" 2>/dev/null || true
        rm -f "$state/service.pid"
    fi
    rm -f "$socket"
    log "stopped"
    ;;
*)
    echo "usage: $0 start|status|stop" >&2
    exit 2
    ;;
esac
