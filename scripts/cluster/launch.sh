#!/usr/bin/env bash
# Start one of CommAtlas's torchrun programs on this node of a cluster (docs/cluster.md).
#
#   scripts/cluster/launch.sh COMMAND [options] [-- arguments for the command]
#
# COMMAND: selftest (python -m reference_impls.selftest), calibrate (commatlas.calibrate) or
# check-ddp (commatlas.check_ddp). Run it once on every node; torchrun starts one process per GPU.
# Every option has an environment default, so the same line works under each launcher:
#
#   --nnodes N          nodes in the job       PET_NNODES (Kubeflow), SLURM_NNODES; else 1
#   --nproc-per-node G  processes on this node PET_NPROC_PER_NODE, SLURM_GPUS_ON_NODE; else the
#                       GPUs nvidia-smi lists (1 when it lists none)
#   --node-rank R       this node, 0..N-1      PET_NODE_RANK, SLURM_NODEID, JOB_COMPLETION_INDEX
#                                              (JobSet); else 0
#   --master-addr HOST  node 0's address       PET_MASTER_ADDR, MASTER_ADDR (needed when N > 1)
#   --master-port PORT  its rendezvous port    PET_MASTER_PORT, MASTER_PORT; else 29500
#   --device cuda|cpu   default cuda (NCCL); cpu runs gloo
#   --python PY         default $PYTHON, else python3
#   --dry-run           print the torchrun command instead of running it
#
# One node: torchrun --standalone. Several: torchrun's static rendezvous (--node-rank,
# --master-addr, --master-port), which every one of these launchers can supply. Bad arguments:
# one line "launch.sh: <message>" on stderr and exit status 2.
set -euo pipefail

die() {
  echo "launch.sh: $*" >&2
  exit 2
}

gpu_count() {
  local count=0
  if command -v nvidia-smi >/dev/null 2>&1; then
    count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  fi
  echo $((count > 0 ? count : 1))
}

positive() {
  [[ "$2" =~ ^[0-9]+$ ]] && (( 10#$2 >= $3 )) || die "$1 must be an integer >= $3, got '$2'"
}

[[ $# -ge 1 ]] || die "give a command: selftest, calibrate or check-ddp"
command=$1
shift
case "$command" in
  selftest) module=reference_impls.selftest ;;
  calibrate) module=commatlas.calibrate ;;
  check-ddp) module=commatlas.check_ddp ;;
  -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown command '$command' (selftest, calibrate, check-ddp)" ;;
esac

nnodes=${PET_NNODES:-${SLURM_NNODES:-1}}
nproc=${PET_NPROC_PER_NODE:-${SLURM_GPUS_ON_NODE:-}}
node_rank=${PET_NODE_RANK:-${SLURM_NODEID:-${JOB_COMPLETION_INDEX:-0}}}
master_addr=${PET_MASTER_ADDR:-${MASTER_ADDR:-}}
master_port=${PET_MASTER_PORT:-${MASTER_PORT:-29500}}
device=cuda
python=${PYTHON:-python3}
dry_run=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nnodes|--nproc-per-node|--node-rank|--master-addr|--master-port|--device|--python)
      [[ $# -ge 2 ]] || die "$1 needs a value"
      case "$1" in
        --nnodes) nnodes=$2 ;;
        --nproc-per-node) nproc=$2 ;;
        --node-rank) node_rank=$2 ;;
        --master-addr) master_addr=$2 ;;
        --master-port) master_port=$2 ;;
        --device) device=$2 ;;
        --python) python=$2 ;;
      esac
      shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; break ;;
    *) die "unknown option '$1' (arguments for $command go after --)" ;;
  esac
done

[[ -n "$nproc" ]] || nproc=$( [[ "$device" == cuda ]] && gpu_count || echo 1 )
positive --nnodes "$nnodes" 1
positive --nproc-per-node "$nproc" 1
positive --node-rank "$node_rank" 0
positive --master-port "$master_port" 1
(( 10#$master_port <= 65535 )) || die "--master-port must be at most 65535, got '$master_port'"
(( 10#$node_rank < 10#$nnodes )) || die "--node-rank $node_rank is not below --nnodes $nnodes"
[[ "$device" == cuda || "$device" == cpu ]] || die "--device must be cuda or cpu, got '$device'"

launch=("$python" -m torch.distributed.run "--nnodes=$nnodes" "--nproc-per-node=$nproc")
if (( 10#$nnodes == 1 )); then
  launch+=(--standalone)
else
  [[ -n "$master_addr" ]] ||
    die "$nnodes nodes need --master-addr (or MASTER_ADDR / PET_MASTER_ADDR)"
  launch+=("--node-rank=$node_rank" "--master-addr=$master_addr" "--master-port=$master_port")
fi
launch+=(-m "$module" --device "$device" "$@")

cd "$(dirname "$0")/../.."  # the repository: the programs run from the clone
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if (( dry_run )); then
  printf '%q' "${launch[0]}"
  printf ' %q' "${launch[@]:1}"
  echo
  exit 0
fi
exec "${launch[@]}"
