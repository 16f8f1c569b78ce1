// Two phases of one call at once: a message phase runs in the background on a nested fiber
// while the caller does shared-memory work (segmented hierarchical algorithms,
// hierarchical_segmented.cpp: the leaders exchange segment k while their node works on
// segment k+1).
//
// Why a fiber: the background phase is a flat algorithm's unchanged function (decide() chose
// it; an algorithm never picks another), and it blocks in wait_all(). On a Background its
// transport's wait_all() polls the parent's test_all() and, while that says "not yet",
// yields back to the caller (Fiber::yield returns to whoever resumed, so this nests inside a
// resumable operation's fiber too). The caller resumes it between its own steps (poll()),
// from the shared-memory waits (PumpTransport::progress), and at finish().
//
// Limits. One background phase at a time: every message of the call goes through one batch
// of the parent transport (wait_all/test_all complete all that was posted), so the caller may
// not post messages while a phase is in the background; its own work must be shared memory
// (no messages), or it runs the phases one after another (start() then runs the phase to its
// end at once). Where the transport cannot test without blocking (test_all() is -1, e.g.
// loom-sim's recording transport) no fiber is made and phases always run one after another.
#pragma once

#include "fiber.hpp"
#include "transport.hpp"

#include <functional>
#include <memory>

namespace loom {

class Background {
public:
    // `net` is the call's transport. `allowed`: the caller's own work between start() and
    // finish() sends no messages (it is shared memory); false runs phases one after another.
    // Call before anything is posted on net (it probes net.test_all()).
    Background(Transport& net, bool allowed);
    ~Background();
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;

    bool overlaps() const { return overlaps_; }
    // Runs phase over `t` (a transport over net, e.g. the leaders' GroupTransport): until its
    // first wait that is not complete, then in the background; or to its end now if phases do
    // not overlap. The previous phase must be finished.
    void start(Transport& t, std::function<void(Transport&)> phase);
    // Lets the background phase go on (no-op if none or it is waiting on messages not done).
    void poll();
    // Runs the background phase to its end (progressing the parent while it waits).
    void finish();

private:
    class Yielding;
    Transport& net_;
    bool overlaps_;
    bool polling_ = false; // poll() runs: a nested progress() must not resume again
    std::unique_ptr<Yielding> wrapper_;
    std::unique_ptr<Fiber> fiber_;
    bool running_ = false;
};

// A node's transport whose progress() also lets the background phase go on, so a rank waiting
// on shared memory for its node keeps the leaders' messages flowing.
class PumpTransport final : public Transport {
public:
    PumpTransport(Transport& inner, Background& bg) : inner_(inner), bg_(bg) {}
    int rank() const override { return inner_.rank(); }
    int size() const override { return inner_.size(); }
    void post_send(int peer, const void* buf, std::size_t bytes) override { inner_.post_send(peer, buf, bytes); }
    void post_recv(int peer, void* buf, std::size_t bytes) override { inner_.post_recv(peer, buf, bytes); }
    void wait_all() override { inner_.wait_all(); }
    int test_all() override { return inner_.test_all(); }
    void** shared_state() override { return inner_.shared_state(); }
    void progress() override
    {
        bg_.poll();
        inner_.progress();
    }
    bool cooperative() const override { return inner_.cooperative(); }

private:
    Transport& inner_;
    Background& bg_;
};

} // namespace loom
