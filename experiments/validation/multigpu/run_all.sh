#!/usr/bin/env bash
# All three multi-GPU measurements on this host, into one results folder (README.md says what each measures).
#
#   experiments/validation/multigpu/run_all.sh [--dry-run] [OUT_DIR]
#
# OUT_DIR defaults to results/multigpu-<date>. --dry-run: tiny sizes and few runs on however many GPUs there
# are (every code path; about 2 minutes on one GPU). Needs python3 with PyTorch (CUDA); nothing is installed.
# Exit status: 0 when every part wrote its CSV, 1 otherwise (the others still run).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dry=""
out=""
for a in "$@"; do
  case "$a" in
    --dry-run) dry="--dry-run" ;;
    -h|--help) sed -n '2,8p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "run_all.sh: unknown option $a" >&2; exit 2 ;;
    *) out="$a" ;;
  esac
done
out="${out:-results/multigpu-$(date +%Y%m%d-%H%M%S)}"
py="${PYTHON:-python3}"
# required in every process (the scripts set them again in each child they start)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) run_all.sh ${dry}"
  echo "## nvidia-smi topo -m"; nvidia-smi topo -m
  echo "## nvidia-smi"; nvidia-smi
  echo "## software"
  "$py" -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version()); print("gpus", [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])'
  echo "## environment"; env | grep -E '^(NCCL_|TORCH_SYMM|NVSHMEM_|CUDA_VISIBLE)' | sort
} > "$out/environment.txt" 2>&1
rc=0
for part in measure_collectives measure_asynctp measure_p2p_copy; do
  echo "=== $part $dry -> $out"
  start=$SECONDS
  "$py" "$here/$part.py" --out "$out" $dry || { echo "=== $part failed (exit $?)"; rc=1; }
  echo "=== $part: $((SECONDS - start)) s"
done
ls -l "$out"
exit $rc
