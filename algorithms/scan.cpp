#include "scan.hpp"

namespace loom {

void linear_scan(Transport& net, MemoryOps& mem, const ScanArgs& args)
{
    const int P = net.size(), me = net.rank();
    const std::size_t bytes = args.count * args.op.elem_size;
    if (bytes == 0) return; // the count is the same on every rank: nobody sends
    if (!args.in_place()) mem.copy(args.recvbuf, args.sendbuf, bytes);
    if (me > 0) {
        // recvbuf = prefix(0..me-1) op x_me: the prefix is the left operand.
        Scratch prefix = mem.scratch(bytes);
        net.post_recv(me - 1, prefix.get(), bytes);
        net.wait_all();
        mem.reduce(args.op, prefix.get(), args.recvbuf, args.count);
    }
    if (me + 1 < P) {
        net.post_send(me + 1, args.recvbuf, bytes);
        net.wait_all();
    }
}

} // namespace loom
