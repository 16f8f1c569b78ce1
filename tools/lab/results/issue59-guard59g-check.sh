# A guard tried at stop 71 and not kept ("guard59g": blocking allreduce handed on at 2 x 2,
# 32-64 KiB, Open MPI 5), checked: loom's choice with it against the job without loom, over
# unlimited links, both pmls, 3 rounds (tools/lab/RESULTS.md, "Between the measured sizes").
#   tools/dev/debian-root run -- bash tools/lab/results/issue59-guard59g-check.sh build-trixie-rel
cd "$(dirname "$0")/../../.."
BUILD=$1
for pml in ucx ob1; do
  tools/dev/emucluster-bench --build-dir $BUILD --hosts 2 --slots 2 --rate none --pml $pml --rounds 3 \
    --algorithms loom --repeats 3 --time 0.02 --collectives allreduce --bytes 24K,32K,40K,48K,56K,64K \
    --csv tools/lab/results/issue59-guard59g-ompi50-h2x2-none-$pml.csv > tools/lab/results/issue59-guard59g-ompi50-h2x2-none-$pml.txt 2>&1 \
    || echo "FAILED $pml"
done
