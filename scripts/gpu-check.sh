#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine (docs/cuda.md), in two steps.
#
#   scripts/gpu-check.sh pack   here, on the development machine (no GPU):
#       fills .gpu-carry/ (ignored by git) with what the GPU machine's image
#       lacks: inih's and oneDNN's headers and libraries (a small sysroot),
#       and the build of zeroth and test_cuda that runs there, made here with
#       ZT_CUDA=ON for any AVX-512 CPU (device time is short: nothing is
#       compiled there unless it fails to start); then packs it all into
#       .gpu-pack/carry.tar.xz (xz keeps the sent tree under the device
#       tool's 64 MiB).
#   scripts/gpu-check.sh run    on the GPU machine, from the repository root,
#       with .gpu-carry carried along; results go to $OUT (default
#       ./gpu-check-out), at most 8 files (the device tool's limit):
#         env.txt          GPU, driver, toolkit, what links (ldd)
#         build.log        only when the carried build does not start there and
#                          one is made there (ZT_GPU_BUILD=1 forces that)
#         test_cuda.log    every op, four nets, train steps, the shared evaluator;
#                          then the ops, nets and evaluator with CUDA graphs and the
#                          fused convolution kernel in each of its shapes
#         bench_devices.txt  zeroth bench devices (CPU against GPU, crossover),
#                          then c4-64x5 with the fused kernel at every batch in each
#                          shape, and without it (im2col + cuBLAS), same run
#         torch_compare.txt  bench/torch_compare.py --device cuda: PyTorch eager,
#                          autocast, torch.compile (+ CUDA graphs) at batches 1, 8,
#                          256, 1024 and the train step at 1024, eager and compiled
#         selfplay.txt     zeroth bench selfplay on the GPU (shared evaluator; one
#                          merged batch in flight, two, and 256 games per actor), then
#                          bench/mctx_selfplay.py (mctx + pgx, JAX) on the same net,
#                          sims and games in flight as the first and the last
#         train_smoke.txt  30 learner steps of Connect Four with device=cuda
#         summary.txt      one line per step: ok / FAILED / skipped
#       About 3 minutes on an H100 (the carried build: no compiling there).
#
# With the device tool: run `scripts/gpu-check.sh pack` here, then
#   run(command="tar -xJf .gpu-pack/carry.tar.xz && bash scripts/gpu-check.sh run",
#       carry=[".gpu-pack"], timeout_s=300)
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
    grep -qx '/.gpu-pack/' "$exclude" 2>/dev/null || echo '/.gpu-pack/' >>"$exclude"
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
    local launcher
    launcher=$(command -v ccache || true)
    PKG_CONFIG_LIBDIR="$CARRY/sysroot/lib/pkgconfig" cmake -S . -B build-gpu \
        -DCMAKE_BUILD_TYPE=Release -DZT_CUDA=ON -DZT_NATIVE=OFF -DZT_MPI=OFF \
        -DCMAKE_C_FLAGS=-march=x86-64-v4 \
        ${launcher:+-DCMAKE_C_COMPILER_LAUNCHER=$launcher} >/dev/null
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
    mkdir -p "$ROOT/.gpu-pack"
    tar -C "$ROOT" -cf - .gpu-carry | xz -T0 -6 >"$ROOT/.gpu-pack/carry.tar.xz"
    du -sh "$ROOT/.gpu-pack/carry.tar.xz"
    echo "packed: now run 'tar -xJf .gpu-pack/carry.tar.xz && bash scripts/gpu-check.sh run'" \
        "on the GPU machine with .gpu-pack carried"
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

    # -- the carried build (made here by `pack`, x86-64-v4): device time is
    # short, so build there only when it does not start --
    local BIN=""
    if [ "${ZT_GPU_BUILD:-0}" != 1 ] && [ -x "$CARRY/bin/zeroth" ] &&
        "$CARRY/bin/zeroth" --version >"$OUT/build.log" 2>&1; then
        BIN=$CARRY/bin
        note "build: the carried one ($(head -1 "$OUT/build.log"))"
        rm -f "$OUT/build.log"
    elif (
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
    ) >>"$OUT/build.log" 2>&1; then
        BIN=$ROOT/build-cuda
        note "build: made there ($((SECONDS - t0)) s)"
    else
        note "build: FAILED (see build.log); stop"
        return 1
    fi
    ldd "$BIN/zeroth" >>"$OUT/env.txt" 2>&1

    # -- tests --
    local t=$SECONDS
    timeout 120 "$BIN/test_cuda" >"$OUT/test_cuda.log" 2>&1
    local rc=$?
    case $rc in
    0) note "test_cuda: ok ($((SECONDS - t)) s)" ;;
    77) note "test_cuda: skipped (no GPU?): $(tail -1 "$OUT/test_cuda.log")" ;;
    *) note "test_cuda: FAILED rc=$rc ($(grep -c FAIL "$OUT/test_cuda.log") FAIL lines)" ;;
    esac

    # -- benchmarks: the defaults, then c4-64x5 with the fused convolution
    # kernel at every batch size, and without it (cuBLAS), same run --
    t=$SECONDS
    {
        timeout 90 "$BIN/zeroth" bench devices --seconds 0.25
        echo "rc=$?"
        echo
        for v in 0 1 2; do
            echo "== c4-64x5, ZT_CUDA_IMPLICIT_MIN_ROWS=0 ZT_CUDA_IMPLICIT_VARIANT=$v (the fused" \
                "convolution kernel at every batch, shape $v: K-32 one stage, K-32 two, K-64 two)"
            ZT_CUDA_IMPLICIT_MIN_ROWS=0 ZT_CUDA_IMPLICIT_VARIANT=$v timeout 40 "$BIN/zeroth" \
                bench devices --net c4-64x5 --seconds 0.25
            echo "rc=$?"
            echo
        done
        echo
        echo "== c4-64x5, ZT_CUDA_IMPLICIT=0 (bf16 convolutions as im2col + cuBLAS + epilogue)"
        ZT_CUDA_IMPLICIT=0 timeout 40 "$BIN/zeroth" bench devices --net c4-64x5 --seconds 0.25
        echo "rc=$?"
    } >"$OUT/bench_devices.txt" 2>&1
    note "bench devices: done ($((SECONDS - t)) s; see rc= lines)"

    # -- PyTorch on the same GPU, same weights (inference; train step at 1024) --
    t=$SECONDS
    PYTHONUNBUFFERED=1 timeout 180 python3 bench/torch_compare.py --device cuda \
        --zeroth "$BIN/zeroth" --nets c4-64x5 --batches 1,8,256,1024 --quick \
        --train-batch 1024 --train-compile >"$OUT/torch_compare.txt" 2>&1
    note "torch compare: rc=$? ($((SECONDS - t)) s)"

    # -- self-play: Zeroth on the GPU (two merged batches in flight, one, and
    # more games per actor), then mctx + pgx at the same net, sims and games
    # in flight (the image's JAX with the carried mctx and pgx) --
    t=$SECONDS
    {
        timeout 40 "$BIN/zeroth" bench selfplay connect4 --seconds 4 --set device=cuda \
            --set selfplay.evaluator=shared
        echo "rc=$?"
        echo "== selfplay.inflight=2 (the default above keeps 1 in flight)"
        timeout 40 "$BIN/zeroth" bench selfplay connect4 --seconds 4 --set device=cuda \
            --set selfplay.evaluator=shared --set selfplay.inflight=2
        echo "rc=$?"
        echo "== games_per_actor=256"
        timeout 40 "$BIN/zeroth" bench selfplay connect4 --seconds 4 --set device=cuda \
            --set selfplay.evaluator=shared --set games_per_actor=256
        echo "rc=$?"
    } >"$OUT/selfplay.txt" 2>&1
    # "self-play connect4: N actor(s) x G games, ..." of the first and last runs
    local inflight g1 g2
    inflight=$(sed -n 's/^self-play connect4: \([0-9]*\) actor(s) x \([0-9]*\) games.*/\1 \2/p' \
        "$OUT/selfplay.txt" | awk '{ print $1 * $2 }')
    g1=$(echo "$inflight" | head -1)
    g2=$(echo "$inflight" | tail -1)
    for games in ${g1:-960} ${g2:-3840}; do
        echo "== mctx + pgx, $games games in flight, 32 sims, bf16"
        PYTHONPATH="$CARRY/pylib" PYTHONUNBUFFERED=1 timeout 60 python3 bench/mctx_selfplay.py \
            --zeroth "$BIN/zeroth" --games "$games" --sims 32 --seconds 3 --repeats 2
        echo "rc=$?"
    done >>"$OUT/selfplay.txt" 2>&1
    note "self-play zeroth vs mctx: done ($((SECONDS - t)) s; see rc= lines)"

    # -- a short training run on the GPU (bench nn's figures are in
    # torch_compare.txt, which runs it) --
    t=$SECONDS
    {
        rm -rf /tmp/zt-gpu-run1
        echo "== train: device=cuda, shared evaluator, 30 learner steps"
        timeout 50 "$BIN/zeroth" train connect4 --run /tmp/zt-gpu-run1 --set device=cuda \
            --set selfplay.evaluator=shared --set learner.min_positions=500 --steps 30 --minutes 0.6
        echo "rc=$?"
    } >"$OUT/train_smoke.txt" 2>&1
    note "train smoke: done ($((SECONDS - t)) s; see rc= lines)"
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
