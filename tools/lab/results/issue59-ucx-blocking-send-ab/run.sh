# A/B: build-trixie-base (HEAD) vs build-trixie-rel (send_and_wait_all), interleaved
cd "$(dirname "$0")/../../../.." && out=tools/lab/results/issue59-ucx-blocking-send-ab
for cfg in "ucx none 2 1" "ucx 1gbit 2 1" "ob1 none 2 1" "ucx none 2 2" "ob1 1gbit 2 2" "ucx none 4 1"; do
  set -- $cfg
  for rep in 1 2; do for b in base rel; do
    tools/dev/emucluster-bench --build-dir build-trixie-$b --hosts $3 --slots $4 --rate $2 --pml $1 --rounds 1 \
      --algorithms ring,recursive_doubling,halving_doubling --repeats 3 --time 0.03 --collectives allgather,allreduce \
      --bytes 64K,256K,1M,4M --csv $out/$1-$2-h$3x$4-$b-$rep.csv >/dev/null 2>&1 || echo "FAILED $cfg $b"
  done; done
done
