// Transport over the glue's C callbacks (loom_transport_t in loom_c_api.h); a failed callback
// becomes a TransportError. loom_run (entry.cpp) uses it as it is; resumable operations
// (resumable.cpp) override its two waits, so they yield instead of blocking.
#pragma once

#include "loom_c_api.h"
#include "topology.hpp"
#include "transport.hpp"

namespace loom {

class CallbackTransport : public Transport {
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
    int test_all() override
    {
        if (t_.test_all == nullptr) return -1;
        const int done = t_.test_all(t_.ctx);
        if (done != 0 && done != 1) throw TransportError(done, "test_all");
        return done;
    }
    void** shared_state() override { return t_.shared_state; }
    void progress() override
    {
        if (t_.progress != nullptr) t_.progress(t_.ctx);
    }
    const topo::Layout* layout() const override
    {
        return t_.topology != nullptr ? static_cast<const topo::Layout*>(t_.topology(t_.ctx)) : nullptr;
    }
    void** node_shared_state() override { return t_.node_shared_state; }
    const std::uint64_t* segment_turn() const override { return t_.segment_turn; }

protected:
    static void check(int rc, const char* what)
    {
        if (rc != 0) throw TransportError(rc, what);
    }
    const loom_transport_t& t_;
};

} // namespace loom
