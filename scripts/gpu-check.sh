#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine (docs/cuda.md), in two steps.
#
#   scripts/gpu-check.sh pack   here, on the development machine (no GPU):
#       fills .gpu-carry/ (ignored by git) with what the GPU machine's image
#       lacks: inih's and oneDNN's headers and libraries (a small sysroot),
#       and a fallback build of zeroth and test_cuda made here with
#       ZT_CUDA=ON for any AVX-512 CPU, in case the build there fails.
#   scripts/gpu-check.sh run    on the GPU machine, from the repository root,
#       with .gpu-carry carried along; results go to $OUT (default
#       ./gpu-check-out), at most 8 files:
#         env.txt          GPU, driver, toolkit, what links (ldd)
#         build.log        configure + build with ZT_CUDA=ON (16 cores)
#         test_cuda.log    every op, four nets, a train step, the shared evaluator
#                          (nets and evaluator again with ZT_CUDA_GRAPHS=1)
#         bench_devices.txt  zeroth bench devices (CPU against GPU, crossover),
#                          then c4-64x5 again with ZT_CUDA_GRAPHS=1
#         bench_nn_cuda.txt  bench nn --backend cuda (inference and train steps)
#         train_smoke.log  a short training run with device=cuda and one with auto
#         selfplay.txt     zeroth bench selfplay on the GPU (shared evaluator, two
#                          merged batches in flight, then one), then
#                          bench/mctx_selfplay.py (mctx + pgx, JAX) on the same net,
#                          sims and games in flight
#         torch_compare.txt  bench/torch_compare.py --device cuda (last; 120 s cap)
#         summary.txt      one line per step: ok / FAILED / skipped
#       Budget: about 6-8 minutes (build ~1-2, tests ~1, benchmarks ~2, self-play
#       ~1.5, the PyTorch comparison up to 2 at the end).
#
# With the device tool: run `scripts/gpu-check.sh pack` here, then
#   run(command="bash scripts/gpu-check.sh run", carry=[".gpu-carry"], timeout_s=540)
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CARRY=$ROOT/.gpu-carry

pack() {
    set -e
    cd "$ROOT"
    local exclude
    exclude=$(git rev-parse --git-path info/exclude)
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.gpu-carry/' "$exclude" 2>/dev/null || echo '/.gpu-carry/' >>"$exclude"
    rm -rf "$CARRY"
    mkdir -p "$CARRY/sysroot/include/oneapi" "$CARRY/sysroot/lib/pkgconfig" "$CARRY/bin" \
        "$CARRY/pylib"
    local inc=/usr/include lib=/usr/lib/x86_64-linux-gnu
    cp "$inc/ini.h" "$CARRY/sysroot/include/"
    cp -r "$inc/oneapi/dnnl" "$CARRY/sysroot/include/oneapi/"
    cp "$inc"/dnnl*.h "$CARRY/sysroot/include/"
    cp "$lib/libinih.a" "$CARRY/sysroot/lib/"
    local dnnl
    dnnl=$(readlink -f "$lib/libdnnl.so")
    cp "$dnnl" "$CARRY/sysroot/lib/$(basename "$(readlink "$lib/libdnnl.so")")"
    ln -sf "$(basename "$(readlink "$lib/libdnnl.so")")" "$CARRY/sysroot/lib/libdnnl.so"
    cp -L /lib/x86_64-linux-gnu/libOpenCL.so.1 "$CARRY/sysroot/lib/"
    cp -L "$lib/libinih.so.1" "$CARRY/sysroot/lib/"
    # pkg-config, where the GPU machine has one, finds inih here
    cat >"$CARRY/sysroot/lib/pkgconfig/inih.pc" <<'EOF'
prefix=${pcfiledir}/../..
includedir=${prefix}/include
libdir=${prefix}/lib
Name: inih
Description: simple .INI file parser (carried)
Version: 55
Libs: -L${libdir} -linih
Cflags: -I${includedir}
EOF
    # The fallback build: no MPI, no HTTP server (fewer libraries to carry),
    # code for any AVX-512 CPU (x86-64-v4: Sapphire Rapids, Zen 4) rather
    # than this one; the CPU backend's kernels need AVX-512.
    rm -f build-gpu/CMakeCache.txt # pkg-config results are cached
    PKG_CONFIG_LIBDIR="$CARRY/sysroot/lib/pkgconfig" cmake -S . -B build-gpu \
        -DCMAKE_BUILD_TYPE=Release -DZT_CUDA=ON -DZT_NATIVE=OFF -DZT_MPI=OFF \
        -DCMAKE_C_FLAGS=-march=x86-64-v4 \
        -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
    cmake --build build-gpu -j2 --target zeroth test_cuda >/dev/null
    cp build-gpu/zeroth build-gpu/test_cuda "$CARRY/bin/"
    # mctx and pgx for bench/mctx_selfplay.py (the image has JAX, no registry):
    # they and their pure-Python dependencies, on PYTHONPATH there.
    local venv
    venv=$(mktemp -d)
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --no-deps --target "$CARRY/pylib" mctx==0.0.71 pgx==2.6.0 \
        chex==0.1.92 toolz svgwrite absl-py typing_extensions
    rm -rf "$venv"
    du -sh "$CARRY"
    echo "packed: now run 'bash scripts/gpu-check.sh run' on the GPU machine with .gpu-carry carried"
}

run() {
    cd "$ROOT"
    OUT=${OUT:-$ROOT/gpu-check-out}
    mkdir -p "$OUT"
    local summary=$OUT/summary.txt
    : >"$summary"
    note() { echo "$*" | tee -a "$summary"; }
    local t0=$SECONDS

    # -- what is there --
    {
        date -u
        nvidia-smi -L || echo "nvidia-smi failed"
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
        nproc
        command -v nvcc && nvcc --version | tail -2
        command -v cmake && cmake --version | head -1
        command -v gcc && gcc --version | head -1
        command -v pkg-config || echo "no pkg-config"
        ls /usr/local/cuda/lib64/libcublas* 2>&1 | head
        python3 -c 'import nvidia.cublas as m; print("pip cublas:", list(m.__path__)[0])' 2>&1
        ldconfig -p | grep -E 'libcuda\.so|libcublas' | head
    } >"$OUT/env.txt" 2>&1

    # cuBLAS at run time: the toolkit's, else the one PyTorch's wheels carry.
    local blas_dirs=""
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
        [ -e "$d/libcublas.so.13" ] && blas_dirs="$blas_dirs:$d"
    done
    local pip_blas
    pip_blas=$(python3 -c 'import nvidia.cublas as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null || true)
    [ -n "$pip_blas" ] && [ -d "$pip_blas" ] && blas_dirs="$blas_dirs:$pip_blas"
    export LD_LIBRARY_PATH="$CARRY/sysroot/lib${blas_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >>"$OUT/env.txt"

    # -- build there (16 cores), else the carried build --
    local BIN=""
    (
        set -e
        export CMAKE_PREFIX_PATH="$CARRY/sysroot"
        if command -v pkg-config >/dev/null; then export PKG_CONFIG_LIBDIR="$CARRY/sysroot/lib/pkgconfig"; fi
        gen=""
        command -v ninja >/dev/null && gen="-G Ninja"
        # warnings of that compiler are logged, not fatal: this checks the GPU
        # shellcheck disable=SC2086
        cmake -S . -B build-cuda $gen -DCMAKE_BUILD_TYPE=Release -DZT_CUDA=ON -DZT_MPI=OFF \
            -DPKG_CONFIG_EXECUTABLE="$(command -v pkg-config || echo /nonexistent)"
        cmake --build build-cuda -j16 --target zeroth test_cuda
    ) >"$OUT/build.log" 2>&1
    if [ $? -eq 0 ]; then
        BIN=$ROOT/build-cuda
        note "build: ok ($((SECONDS - t0)) s)"
    elif [ -x "$CARRY/bin/zeroth" ]; then
        BIN=$CARRY/bin
        note "build: FAILED there (see build.log); using the carried build (x86-64-v4)"
    else
        note "build: FAILED and nothing carried; stop"
        return 1
    fi
    ldd "$BIN/zeroth" >>"$OUT/env.txt" 2>&1

    # -- tests --
    local t=$SECONDS
    timeout 180 "$BIN/test_cuda" >"$OUT/test_cuda.log" 2>&1
    local rc=$?
    case $rc in
    0) note "test_cuda: ok ($((SECONDS - t)) s)" ;;
    77) note "test_cuda: skipped (no GPU?): $(tail -1 "$OUT/test_cuda.log")" ;;
    *) note "test_cuda: FAILED rc=$rc ($(grep -c FAIL "$OUT/test_cuda.log") FAIL lines)" ;;
    esac

    # -- benchmarks --
    t=$SECONDS
    timeout 150 "$BIN/zeroth" bench devices --seconds 0.25 >"$OUT/bench_devices.txt" 2>&1 &&
        note "bench devices: ok ($((SECONDS - t)) s)" || note "bench devices: FAILED"
    t=$SECONDS
    {
        echo
        echo "== again with ZT_CUDA_GRAPHS=1 (inference replayed from CUDA graphs up to batch 256)"
        ZT_CUDA_GRAPHS=1 timeout 60 "$BIN/zeroth" bench devices --net c4-64x5 --seconds 0.25
    } >>"$OUT/bench_devices.txt" 2>&1 &&
        note "bench devices, CUDA graphs: ok ($((SECONDS - t)) s)" || note "bench devices, CUDA graphs: FAILED"
    t=$SECONDS
    {
        timeout 60 "$BIN/zeroth" bench nn --backend cuda --net c4-64x5 --precision both \
            --seconds 0.3 --batch 1 --batch 8 --batch 256 --batch 1024 --batch 4096
        echo "rc=$?"
        timeout 40 "$BIN/zeroth" bench nn --backend cuda --net bg-mlp --precision bf16 \
            --seconds 0.3 --batch 1 --batch 256 --batch 4096
        echo "rc=$?"
    } >"$OUT/bench_nn_cuda.txt" 2>&1
    note "bench nn cuda: done ($((SECONDS - t)) s; see rc= lines)"

    # -- training runs on the device --
    t=$SECONDS
    {
        rm -rf /tmp/zt-gpu-run1 /tmp/zt-gpu-run2
        echo "== device=cuda, shared evaluator, 30 learner steps"
        timeout 70 "$BIN/zeroth" train connect4 --run /tmp/zt-gpu-run1 --set device=cuda \
            --set selfplay.evaluator=shared --set learner.min_positions=500 --steps 30 --minutes 1
        echo "rc=$?"
        tail -5 /tmp/zt-gpu-run1/log.txt 2>/dev/null
        echo "== device=auto (crossover measured, then cached)"
        timeout 45 "$BIN/zeroth" train connect4 --run /tmp/zt-gpu-run2 --set device=auto \
            --set selfplay.evaluator=shared --set learner.min_positions=500 --steps 5 --minutes 0.7
        echo "rc=$?"
        cat /tmp/zt-gpu-run2/device_crossover.txt 2>/dev/null
    } >"$OUT/train_smoke.log" 2>&1
    note "train smoke: done ($((SECONDS - t)) s; see rc= lines)"

    # -- self-play: Zeroth on the GPU, then mctx + pgx at the same net, sims
    # and games in flight (the image's JAX with the carried mctx and pgx) --
    t=$SECONDS
    {
        timeout 60 "$BIN/zeroth" bench selfplay connect4 --seconds 4 --set device=cuda \
            --set selfplay.evaluator=shared
        echo "rc=$?"
        # the service with one merged batch in flight, against the default two
        echo "== selfplay.inflight=1 (the default above keeps 2 in flight on the GPU)"
        timeout 40 "$BIN/zeroth" bench selfplay connect4 --seconds 4 --set device=cuda \
            --set selfplay.evaluator=shared --set selfplay.inflight=1
        echo "rc=$?"
    } >"$OUT/selfplay.txt" 2>&1
    # "self-play connect4: N actor(s) x G games, ..."
    local games
    games=$(sed -n 's/^self-play connect4: \([0-9]*\) actor(s) x \([0-9]*\) games.*/\1 \2/p' \
        "$OUT/selfplay.txt" | awk '{ print $1 * $2 }')
    {
        echo "== mctx + pgx, ${games:-960} games in flight, 32 sims, bf16"
        PYTHONPATH="$CARRY/pylib" PYTHONUNBUFFERED=1 timeout 100 python3 bench/mctx_selfplay.py \
            --zeroth "$BIN/zeroth" --games "${games:-960}" --sims 32 --seconds 3 --repeats 2
        echo "rc=$?"
    } >>"$OUT/selfplay.txt" 2>&1
    note "self-play zeroth vs mctx: done ($((SECONDS - t)) s; see rc= lines)"

    # -- last (may be cut by its timeout): PyTorch on the same GPU, same weights --
    t=$SECONDS
    PYTHONUNBUFFERED=1 timeout 120 python3 bench/torch_compare.py --device cuda \
        --zeroth "$BIN/zeroth" --nets c4-64x5 --batches 8,1024 --quick \
        >"$OUT/torch_compare.txt" 2>&1
    note "torch compare: rc=$? ($((SECONDS - t)) s)"
    note "total: $((SECONDS - t0)) s on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
}

case "${1:-}" in
pack) pack ;;
run) run ;;
*)
    echo "usage: scripts/gpu-check.sh pack|run   (see the comment at the top)" >&2
    exit 2
    ;;
esac
