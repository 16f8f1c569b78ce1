// A Transport over a subset of another transport's ranks, for algorithms built from phases
// on groups: the ranks of one node, or one rank per node (hierarchical.cpp).
//
// Group rank i is parent rank members[i]. Messages go through the parent unchanged, with the
// parent's tag, so pairwise ordering holds across phases: every rank runs the phases in the
// same order, and each phase ends in wait_all() before the next begins.
#pragma once

#include "transport.hpp"

#include <span>

namespace loom {

class GroupTransport final : public Transport {
public:
    // `members` must contain parent.rank() and outlive this object. `shared` is the slot the
    // shm family keeps this group's segment in (nullptr: none; shm phases then use messages):
    // it must belong to this exact group of ranks, on every member.
    GroupTransport(Transport& parent, std::span<const int> members, void** shared = nullptr);

    int rank() const override { return rank_; }
    int size() const override { return int(members_.size()); }
    void post_send(int peer, const void* buf, std::size_t bytes) override
    {
        parent_.post_send(members_[std::size_t(peer)], buf, bytes);
    }
    void post_recv(int peer, void* buf, std::size_t bytes) override
    {
        parent_.post_recv(members_[std::size_t(peer)], buf, bytes);
    }
    void wait_all() override { parent_.wait_all(); }
    int test_all() override { return parent_.test_all(); }
    void** shared_state() override { return shared_; }
    void progress() override { parent_.progress(); }

private:
    Transport& parent_;
    std::span<const int> members_;
    void** shared_;
    int rank_ = -1;
};

} // namespace loom
