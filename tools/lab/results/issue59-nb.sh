# non-blocking (or, with FORM persistent, persistent) calls across emulated nodes: loom's choice against the job without loom
cd "$(dirname "$0")/../../.."
BUILD=$1 TAG=$2 FORM=${3:-nonblocking}  # e.g. build-rel ompi41; on 5.0: tools/dev/debian-root run -- bash THIS build-trixie-rel ompi50
case $FORM in nonblocking) NAME=nb ;; persistent) NAME=pers ;; *) echo "FORM: nonblocking or persistent" >&2; exit 2 ;; esac
for shape in "2 2" "3 2" "4 1"; do set -- $shape
  for pml in ob1 ucx; do for rate in 1gbit none; do
    tools/dev/emucluster-bench --build-dir $BUILD --hosts $1 --slots $2 --rate $rate --pml $pml --rounds 3 \
      --algorithms loom --repeats 3 --time 0.02 --form $FORM \
      --collectives allreduce,allgather,reduce_scatter_block,bcast,alltoall --bytes 8,4K,64K,1M \
      --csv tools/lab/results/issue59-$NAME-$TAG-h$1x$2-$rate-$pml.csv > tools/lab/results/issue59-$NAME-$TAG-h$1x$2-$rate-$pml.txt 2>&1 \
      || echo "FAILED $shape $pml $rate"
  done; done
done
