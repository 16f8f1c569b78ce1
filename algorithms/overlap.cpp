#include "overlap.hpp"

#include <stdexcept>
#include <utility>

namespace loom {

// The background phase's transport: the phase's own, except that a wait yields to the caller
// until the parent's test_all() says the batch is done.
class Background::Yielding final : public Transport {
public:
    explicit Yielding(Transport& inner) : inner_(&inner) {}
    void retarget(Transport& inner) { inner_ = &inner; }
    int rank() const override { return inner_->rank(); }
    int size() const override { return inner_->size(); }
    void post_send(int peer, const void* buf, std::size_t bytes) override { inner_->post_send(peer, buf, bytes); }
    void post_recv(int peer, void* buf, std::size_t bytes) override { inner_->post_recv(peer, buf, bytes); }
    void wait_all() override
    {
        for (;;) {
            const int done = inner_->test_all();
            if (done == 1) return;
            if (done != 0) throw std::logic_error("Background: the transport stopped testing");
            Fiber::yield();
        }
    }
    int test_all() override { return inner_->test_all(); }
    void** shared_state() override { return inner_->shared_state(); }
    // The phase is messages only; progress is the caller's (poll, finish).
    void progress() override {}
    const topo::Layout* layout() const override { return inner_->layout(); }

private:
    Transport* inner_;
};

Background::Background(Transport& net, bool allowed) : net_(net), overlaps_(allowed && net.test_all() != -1) {}

Background::~Background() = default;

void Background::start(Transport& t, std::function<void(Transport&)> phase)
{
    if (running_) throw std::logic_error("Background: a phase is still running");
    if (!overlaps_) {
        phase(t);
        return;
    }
    if (wrapper_)
        wrapper_->retarget(t);
    else
        wrapper_ = std::make_unique<Yielding>(t);
    auto body = [this, phase = std::move(phase)] { phase(*wrapper_); };
    if (!fiber_)
        fiber_ = std::make_unique<Fiber>(std::move(body));
    else if (!fiber_->rearm(std::move(body)))
        throw std::logic_error("Background: the fiber did not finish");
    running_ = true;
    poll();
}

void Background::poll()
{
    if (!running_ || polling_) return;
    polling_ = true;
    struct Reset {
        bool& flag;
        ~Reset() { flag = false; }
    } reset{polling_};
    try {
        fiber_->resume(); // rethrows what the phase threw
    } catch (...) {
        running_ = false;
        throw;
    }
    running_ = !fiber_->finished();
}

void Background::finish()
{
    while (running_) {
        poll();
        if (running_) net_.progress(); // a resumable operation yields to its resumer here
    }
}

} // namespace loom
