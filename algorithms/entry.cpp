// The C entry points of loom's core (declared in loom_c_api.h). They adapt the glue's C
// callbacks to the C++ interfaces, pick an algorithm from the registry, and turn every C++
// exception into an error code: no exception ever crosses into Open MPI.
#include "loom_c_api.h"

#include "reduce_kernels.hpp"
#include "registry.hpp"

#include <new>

namespace loom {
namespace {

// Transport over the glue's callbacks; a failed callback becomes a TransportError.
class CallbackTransport final : public Transport {
public:
    explicit CallbackTransport(const loom_transport_t& t) : t_(t) {}
    int rank() const override { return t_.rank; }
    int size() const override { return t_.size; }
    void post_send(int peer, const void* buf, std::size_t bytes) override
    {
        check(t_.isend(t_.ctx, peer, buf, bytes), "isend");
    }
    void post_recv(int peer, void* buf, std::size_t bytes) override
    {
        check(t_.irecv(t_.ctx, peer, buf, bytes), "irecv");
    }
    void wait_all() override { check(t_.wait_all(t_.ctx), "wait_all"); }

private:
    static void check(int rc, const char* what)
    {
        if (rc != 0) throw TransportError(rc, what);
    }
    const loom_transport_t& t_;
};

Reduction to_reduction(const loom_reduction_t& r)
{
    return Reduction{r.elem_size, r.commutative != 0, r.fn, r.ctx};
}

template <class F>
int guarded(F&& body)
{
    try {
        body();
        return LOOM_SUCCESS;
    } catch (const TransportError& e) {
        return e.code();
    } catch (const std::bad_alloc&) {
        return LOOM_ERR_NO_MEMORY;
    } catch (...) {
        return LOOM_ERR_INTERNAL;
    }
}

} // namespace
} // namespace loom

using namespace loom;

extern "C" int loom_find_kernel(loom_op_t op, loom_type_t type, loom_reduction_t* out)
{
    auto k = find_kernel(op, type);
    if (!k) return 0;
    *out = loom_reduction_t{k->elem_size, k->commutative ? 1 : 0, k->fn, k->ctx};
    return 1;
}

extern "C" const char* loom_allreduce_choose(int comm_size, std::size_t count, int commutative,
                                             const char** why)
{
    // Until the rule table lands, the first registered algorithm that can serve the call
    // wins. Registry names are string literals, so the pointers outlive the call.
    const CallShape call{comm_size, count, commutative != 0};
    std::optional<std::string_view> reason;
    for (const Algorithm& a : all_algorithms()) {
        if (a.collective != Collective::allreduce) continue;
        reason = why_not(a, call);
        if (!reason) return a.name.data();
    }
    if (why != nullptr) *why = reason ? reason->data() : "no allreduce algorithm is registered";
    return nullptr;
}

extern "C" int loom_allreduce_run(const char* algorithm, const loom_transport_t* transport,
                                  const void* sbuf, void* rbuf, std::size_t count,
                                  const loom_reduction_t* op)
{
    return guarded([&] {
        const Algorithm* algo = find_algorithm(Collective::allreduce, algorithm);
        if (algo == nullptr) throw std::invalid_argument("unknown allreduce algorithm");
        CallbackTransport net(*transport);
        HostMemory mem;
        algo->allreduce(net, mem, AllreduceArgs{sbuf, rbuf, count, to_reduction(*op)});
    });
}
