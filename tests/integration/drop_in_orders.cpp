// drop_in_check --part orders: persistent requests of every collective started in a different
// order on each rank, with blocking calls between them at different places, and non-blocking
// operations on two communicators completed in a different order on each rank (drop_in_check.cpp
// says why).
#include "call_model.hpp"
#include "drop_in_check.hpp"
#include "mpi_call.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>

namespace drop_in {

namespace {

const auto kAll = loom::all_collectives();

// One persistent request of a collective over ints, made from its row (call_model.hpp): v
// blocks reversed with gaps, rooted ones from or to the last rank.
struct Persistent {
    std::string what;
    model::Call call;
    MPI_Request req = MPI_REQUEST_NULL;
    Persistent(loom::Collective c, int n, MPI_Comm comm)
        : what(collective_name(c) + "_init of " + std::to_string(n)),
          call(model::Spec{.collective = c, .count = n, .root = size - 1, .gaps = true}, comm)
    {
        loom::tools::start_call(c, loom::tools::Form::persistent, call.args, &req);
    }
};

// A rank's order of starts: rotated by the rank, reversed on odd ranks.
std::vector<std::size_t> order_for(int r, std::size_t n, int start)
{
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = (i + std::size_t(r) + std::size_t(start)) % n;
    if (r % 2 == 1) std::reverse(order.begin(), order.end());
    return order;
}

// A blocking allreduce and bcast with a check, between starts.
void blocking_pair(int salt)
{
    int in = value(rank, 0, salt), out = 0, expected = 0;
    for (int q = 0; q < size; ++q) expected += value(q, 0, salt);
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (out != expected) fail("blocking allreduce between persistent starts");
    int b = rank == 0 ? salt : -1;
    MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (b != salt) fail("blocking bcast between persistent starts");
}

// One round: every collective's persistent request (with `forced` per collective), started in
// each rank's own order three times, blocking calls placed differently on each rank.
void persistent_round(const std::vector<std::string>& forced, int n, const std::string& label)
{
    for (std::size_t k = 0; k < kAll.size(); ++k)
        force(kAll[k], forced[k]);
    std::vector<std::unique_ptr<Persistent>> reqs;
    for (loom::Collective c : kAll) reqs.push_back(std::make_unique<Persistent>(c, n, MPI_COMM_WORLD));
    for (int start = 0; start < 3; ++start) {
        std::snprintf(where, sizeof where, "part orders, persistent %s, n %d, start %d", label.c_str(), n, start);
        const int salt = start * 13 + n;
        for (auto& r : reqs) r->call.fill(salt);
        const auto order = order_for(rank, reqs.size(), start);
        // Even ranks make the blocking calls after starting everything, odd ranks before.
        if (rank % 2 == 1) blocking_pair(salt);
        for (std::size_t i : order) MPI_Start(&reqs[i]->req);
        if (rank % 2 == 0) blocking_pair(salt);
        for (std::size_t i : order_for(rank + 1, reqs.size(), start)) MPI_Wait(&reqs[i]->req, MPI_STATUS_IGNORE);
        for (auto& r : reqs)
            if (const std::string wrong = r->call.check(salt); !wrong.empty())
                fail(r->what + " started out of order, " + label + ": " + wrong);
    }
    for (auto& r : reqs) MPI_Request_free(&r->req);
}

// Non-blocking operations on two communicators, started in the same order everywhere (MPI's
// rule) and completed in a different order on each rank.
void nonblocking_round(MPI_Comm other, int n, const std::string& label)
{
    std::snprintf(where, sizeof where, "part orders, non-blocking %s, n %d", label.c_str(), n);
    const auto N = std::size_t(n);
    std::vector<std::vector<int>> bufs(6, std::vector<int>(N * std::size_t(size)));
    std::vector<int> sendbuf(N * std::size_t(size));
    for (std::size_t i = 0; i < sendbuf.size(); ++i) sendbuf[i] = value(rank, int(i), n);
    MPI_Request reqs[6];
    MPI_Comm comms[2] = {MPI_COMM_WORLD, other};
    for (int k = 0; k < 6; ++k) {
        MPI_Comm comm = comms[k % 2];
        std::vector<int>& out = bufs[std::size_t(k)];
        if (k / 2 == 0) MPI_Iallreduce(sendbuf.data(), out.data(), n, MPI_INT, MPI_SUM, comm, &reqs[k]);
        if (k / 2 == 1) {
            if (rank == 0) std::copy(sendbuf.begin(), sendbuf.begin() + n, out.begin());
            MPI_Ibcast(out.data(), n, MPI_INT, 0, comm, &reqs[k]);
        }
        if (k / 2 == 2) MPI_Iallgather(sendbuf.data(), n, MPI_INT, out.data(), n, MPI_INT, comm, &reqs[k]);
    }
    for (std::size_t i : order_for(rank, 6, n)) MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    for (int k = 0; k < 6; ++k)
        for (std::size_t i = 0; i < N * (k / 2 == 2 ? std::size_t(size) : 1); ++i) {
            int e = 0;
            if (k / 2 == 0)
                for (int q = 0; q < size; ++q) e += value(q, int(i), n);
            if (k / 2 == 1) e = value(0, int(i), n);
            if (k / 2 == 2) e = value(int(i / N), int(i % N), n);
            if (bufs[std::size_t(k)][i] != e) {
                fail("non-blocking operation " + std::to_string(k) + " completed out of order, " + label);
                break;
            }
        }
}

} // namespace

void part_orders()
{
    MPI_Comm other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    // Rounds: loom's choice, then the k-th algorithm of every collective (wrapping), then shm
    // for every collective that has it (the case that hung: two persistent shm requests).
    std::vector<std::vector<std::string>> names;
    std::size_t rounds = 0;
    for (loom::Collective c : kAll) {
        names.push_back(forced_names(c));
        rounds = std::max(rounds, names.back().size());
    }
    auto round_of = [&](std::size_t k) {
        std::vector<std::string> f;
        for (const auto& list : names) f.push_back(list[k % list.size()]);
        return f;
    };
    std::vector<std::pair<std::string, std::vector<std::string>>> plan;
    for (std::size_t k = 0; k < rounds; ++k) {
        std::string label = "forced";
        for (const std::string& s : round_of(k)) label += " " + (s.empty() ? std::string("(choice)") : s);
        plan.emplace_back(label, round_of(k));
    }
    if (loom_loaded) plan.emplace_back("shm everywhere", std::vector<std::string>(kAll.size(), "shm"));
    for (const auto& [label, forced] : plan)
        for (int n : {1, 7, 1000}) {
            persistent_round(forced, n, label);
            for (std::size_t k = 0; k < kAll.size(); ++k)
                force(kAll[k], forced[k]);
            nonblocking_round(other, n, label);
        }
    for (loom::Collective c : kAll) force(c, "");
    MPI_Comm_free(&other);
}

} // namespace drop_in
