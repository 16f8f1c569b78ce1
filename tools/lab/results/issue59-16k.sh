# allreduce between 4 KiB and 64 KiB across emulated nodes (issue59's tables measured 4K and 64K
# only): every loom algorithm, loom's choice and the job without loom, by form.
#   tools/dev/debian-root run -- bash tools/lab/results/issue59-16k.sh build-trixie-rel ompi50 "4 1" ucx blocking [none|1gbit]
cd "$(dirname "$0")/../../.."
BUILD=$1 TAG=$2 SHAPE=$3 PML=$4 FORM=$5 RATE=${6:-none}; set -- $SHAPE
tools/dev/emucluster-bench --build-dir $BUILD --hosts $1 --slots $2 --rate $RATE --pml $PML --rounds 3 \
  --algorithms all --repeats 3 --time 0.02 --form $FORM --collectives allreduce --bytes ${BYTES:-8K,16K,32K} \
  --csv tools/lab/results/issue59-16k${BYTES:+-b}-$TAG-h$1x$2-$RATE-$PML-$FORM.csv > tools/lab/results/issue59-16k${BYTES:+-b}-$TAG-h$1x$2-$RATE-$PML-$FORM.txt 2>&1 \
  || echo "FAILED $SHAPE $PML $FORM"
