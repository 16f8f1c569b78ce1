# guard59g checked (selection_rules/measured/guard59g-emucluster): loom's choice with it (blocking
# allreduce handed on at 2 x 2, 32-64 KiB, Open MPI 5), the pick it replaces (hierarchical_rs,
# forced, its leaders as the table gives them) and "fallback", in one job, against the job without
# loom; both pmls and links, 5 rounds.
#   tools/dev/debian-root run -- bash tools/lab/results/issue59-guard59g-check.sh build-trixie-rel TAG
cd "$(dirname "$0")/../../.."
BUILD=$1 TAG=${2:-ompi50}
for rate in none 1gbit; do for pml in ucx ob1; do
  tools/dev/emucluster-bench --build-dir $BUILD --hosts 2 --slots 2 --rate $rate --pml $pml --rounds 5 \
    --algorithms loom,hierarchical_rs,fallback --repeats 3 --time 0.02 --collectives allreduce --bytes 24K,32K,40K,48K,56K,64K \
    --csv tools/lab/results/issue59-guard59g-$TAG-h2x2-$rate-$pml.csv > tools/lab/results/issue59-guard59g-$TAG-h2x2-$rate-$pml.txt 2>&1 \
    || echo "FAILED $rate $pml"
done; done
