# The one served loss of issue59-pers.sh on Open MPI 5.0 (allreduce_init, 4 hosts x 1 rank, UCX,
# unlimited links, 4 KiB: 0.58, 0.82, 0.92 by round) measured again, with its neighbours and with
# "fallback" (loom handing on to Open MPI's default in the same job) beside loom's choice.
#   tools/dev/debian-root run -- bash tools/lab/results/issue59-pers-recheck.sh build-trixie-rel ompi50
cd "$(dirname "$0")/../../.."
BUILD=$1 TAG=$2
for pml in ucx ob1; do
  tools/dev/emucluster-bench --build-dir $BUILD --hosts 4 --slots 1 --rate none --pml $pml --rounds 5 \
    --algorithms loom,fallback --repeats 3 --time 0.02 --form persistent --collectives allreduce --bytes 1K,4K,16K \
    --csv tools/lab/results/issue59-persre-$TAG-h4x1-none-$pml.csv > tools/lab/results/issue59-persre-$TAG-h4x1-none-$pml.txt 2>&1 \
    || echo "FAILED $pml"
done
