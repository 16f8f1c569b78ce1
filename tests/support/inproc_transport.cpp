#include "inproc_transport.hpp"

#include "shm.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <cstring>
#include <exception>
#include <thread>

namespace loom::test {

struct InprocMessage {
    std::vector<std::byte> data;
    int sender = -1;
    bool received = false;
};

// Shared state of one run: one FIFO of messages per (sender, receiver) pair.
class InprocFabric {
public:
    explicit InprocFabric(int ranks) : ranks_(ranks), queues_(std::size_t(ranks) * ranks), wakeup_(std::size_t(ranks))
    {}

    using Message = InprocMessage;

    int ranks() const { return ranks_; }
    std::deque<std::shared_ptr<Message>>& queue(int from, int to) { return queues_[std::size_t(from) * ranks_ + to]; }

    std::mutex mutex;
    // One condition variable per rank: a send wakes its receiver, a receive its sender, so
    // P ranks do not all wake on every message.
    std::condition_variable& wakeup(int rank) { return wakeup_[std::size_t(rank)]; }
    void wake_all()
    {
        for (auto& cv : wakeup_) cv.notify_all();
    }
    std::size_t progress = 0; // bumped on every send or receive; a deadlock stops it
    bool failed = false;      // a rank failed: the others stop waiting

    std::size_t leftover() const
    {
        std::size_t n = 0;
        for (const auto& q : queues_) n += q.size();
        return n;
    }

private:
    int ranks_;
    std::vector<std::deque<std::shared_ptr<Message>>> queues_;
    std::vector<std::condition_variable> wakeup_;
};

InprocTransport::~InprocTransport()
{
    shm_release(shared_state_);
    shm_release(node_shared_state_);
}

void InprocTransport::progress()
{
    // A rank waiting on shared memory for a rank that failed would wait forever.
    std::lock_guard<std::mutex> hold(fabric_.mutex);
    if (fabric_.failed) throw std::runtime_error("another rank failed");
}

int InprocTransport::size() const { return fabric_.ranks(); }

void InprocTransport::post_send(int peer, const void* buf, std::size_t bytes)
{
    if (peer < 0 || peer >= size() || peer == rank_) throw std::logic_error("send to invalid peer");
    const auto* p = static_cast<const std::byte*>(buf);
    sends_.push_back({peer, const_cast<void*>(buf), bytes, std::vector<std::byte>(p, p + bytes)});
}

void InprocTransport::post_recv(int peer, void* buf, std::size_t bytes)
{
    if (peer < 0 || peer >= size() || peer == rank_) throw std::logic_error("receive from invalid peer");
    // A receive buffer's contents are undefined until wait_all(): make them garbage, so a
    // schedule that reads one early gets wrong results.
    if (bytes != 0) std::memset(buf, 0xCD, bytes);
    recvs_.push_back({peer, buf, bytes, {}});
}

// Hands the sends posted since the last push to their receivers (with the lock held). A send
// buffer must not change between post and this point.
void InprocTransport::push_sends()
{
    for (Pending& s : sends_) {
        if (s.bytes != 0 && std::memcmp(s.buf, s.posted.data(), s.bytes) != 0) {
            fabric_.failed = true;
            fabric_.wake_all();
            throw std::runtime_error("rank " + std::to_string(rank_) + " changed a send buffer before wait_all");
        }
        auto msg = std::make_shared<InprocMessage>();
        msg->data = std::move(s.posted);
        msg->sender = rank_;
        if (recording_) sent_log_.push_back({waits_, s.peer, s.bytes});
        fabric_.queue(rank_, s.peer).push_back(msg);
        fabric_.wakeup(s.peer).notify_all();
        in_flight_.push_back(msg);
        ++messages_sent_;
        bytes_sent_ += s.bytes;
    }
    sends_.clear();
    ++fabric_.progress;
}

// Completes the receives whose messages arrived, in posting order (the matching rule); true
// once every receive and send of the batch is done, and then the batch is over.
bool InprocTransport::complete_arrived()
{
    while (next_recv_ < recvs_.size()) {
        const Pending& r = recvs_[next_recv_];
        auto& q = fabric_.queue(r.peer, rank_);
        if (q.empty()) break;
        auto msg = q.front();
        if (msg->data.size() != r.bytes) {
            fabric_.failed = true;
            fabric_.wake_all();
            throw std::runtime_error("rank " + std::to_string(rank_) + " expected " + std::to_string(r.bytes) +
                                     " bytes from rank " + std::to_string(r.peer) + ", got " +
                                     std::to_string(msg->data.size()));
        }
        q.pop_front();
        if (r.bytes != 0) std::memcpy(r.buf, msg->data.data(), r.bytes);
        msg->received = true;
        ++next_recv_;
        ++fabric_.progress;
        fabric_.wakeup(msg->sender).notify_all();
    }
    bool sends_done = true;
    for (const auto& m : in_flight_) sends_done = sends_done && m->received;
    if (next_recv_ != recvs_.size() || !sends_done) return false;
    recvs_.clear();
    in_flight_.clear();
    next_recv_ = 0;
    ++waits_;
    return true;
}

int InprocTransport::test_all()
{
    if (!testable_) return -1;
    std::unique_lock lock(fabric_.mutex);
    if (fabric_.failed) throw std::runtime_error("another rank failed");
    push_sends();
    if (complete_arrived()) return 1;
    lock.unlock();
    std::this_thread::yield(); // a rank polling in a loop lets the others (threads) run
    return 0;
}

void InprocTransport::wait_all()
{
    using namespace std::chrono_literals;
    std::unique_lock lock(fabric_.mutex);
    push_sends();
    auto last_progress = fabric_.progress;
    auto stalled_since = std::chrono::steady_clock::now();
    while (!complete_arrived()) {
        if (fabric_.failed) throw std::runtime_error("another rank failed");
        fabric_.wakeup(rank_).wait_for(lock, 20ms);
        if (fabric_.progress != last_progress) {
            last_progress = fabric_.progress;
            stalled_since = std::chrono::steady_clock::now();
        } else if (std::chrono::steady_clock::now() - stalled_since > 3s) {
            fabric_.failed = true;
            fabric_.wake_all();
            throw std::runtime_error("deadlock: rank " + std::to_string(rank_) +
                                     " waits and no rank has progressed for 3 s");
        }
    }
}

// Each allocation carries a header naming its CountingMemory and size, since a Scratch's
// deleter is a plain function pointer.
namespace {
struct alignas(std::max_align_t) ScratchHeader {
    CountingMemory* owner;
    std::size_t bytes;
};
} // namespace

Scratch CountingMemory::scratch(std::size_t bytes)
{
    auto* raw = static_cast<std::byte*>(std::malloc(sizeof(ScratchHeader) + (bytes == 0 ? 1 : bytes)));
    if (raw == nullptr) throw std::bad_alloc();
    new (raw) ScratchHeader{this, bytes};
    outstanding_ += bytes;
    peak_ = std::max(peak_, outstanding_);
    return Scratch(raw + sizeof(ScratchHeader), [](std::byte* p) {
        if (p == nullptr) return;
        auto* header = reinterpret_cast<ScratchHeader*>(p - sizeof(ScratchHeader));
        header->owner->outstanding_ -= header->bytes;
        std::free(header);
    });
}

RunStats run_ranks(int ranks, const std::function<void(InprocTransport&)>& body)
{
    InprocFabric fabric(ranks);
    std::vector<InprocTransport> transports;
    transports.reserve(ranks);
    for (int r = 0; r < ranks; ++r) transports.emplace_back(fabric, r);

    std::vector<std::exception_ptr> errors(ranks);
    std::vector<RankFailures> failures(ranks); // each rank writes only its own
    std::vector<std::thread> threads;
    threads.reserve(ranks);
    for (int r = 0; r < ranks; ++r) {
        threads.emplace_back([&, r] {
            const RankScope scope(r, failures[std::size_t(r)]);
            try {
                body(transports[r]);
            } catch (...) {
                errors[r] = std::current_exception();
                std::lock_guard lock(fabric.mutex);
                fabric.failed = true;
                fabric.wake_all();
            }
        });
    }
    for (auto& t : threads) t.join();
    // Report the root cause, not the "another rank failed" echoes.
    std::exception_ptr first;
    for (auto& e : errors) {
        if (!e) continue;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            if (std::string(ex.what()) != "another rank failed") std::rethrow_exception(e);
        }
        first = e;
    }
    if (first) std::rethrow_exception(first);
    if (fabric.leftover() != 0)
        throw std::runtime_error(std::to_string(fabric.leftover()) + " messages were sent but never received");
    if (std::string failed = describe_failures(failures); !failed.empty()) throw RankCheckFailure(failed);

    RunStats stats;
    for (const auto& t : transports) {
        stats.messages_sent.push_back(t.messages_sent());
        stats.bytes_sent.push_back(t.bytes_sent());
        stats.waits.push_back(t.waits());
    }
    return stats;
}

} // namespace loom::test
