# Does a call loom hands on cost what it costs without loom? 2 hosts x 2 ranks, unlimited links,
# Open MPI 5: the loom job forced to hand every allreduce on ("fallback": han serves it) against the
# job without loom, interleaved, 5 rounds; 8 B and 4 KiB (where earlier guards hand on) and 32-48 KiB.
#   tools/dev/debian-root run -- bash tools/lab/results/issue59-handon-probe.sh build-trixie-rel TAG
cd "$(dirname "$0")/../../.."
BUILD=$1 TAG=$2
for pml in ucx ob1; do
  tools/dev/emucluster-bench --build-dir $BUILD --hosts 2 --slots 2 --rate none --pml $pml --rounds 5 \
    --algorithms fallback --repeats 3 --time 0.02 --collectives allreduce --bytes 8,4K,32K,40K,48K \
    --csv tools/lab/results/issue59-handon-$TAG-h2x2-none-$pml.csv > tools/lab/results/issue59-handon-$TAG-h2x2-none-$pml.txt 2>&1 \
    || echo "FAILED $pml"
done
