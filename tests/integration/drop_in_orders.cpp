// drop_in_check --part orders: persistent requests of every collective started in a different
// order on each rank, with blocking calls between them at different places, and non-blocking
// operations on two communicators completed in a different order on each rank (drop_in_check.cpp
// says why).
#include "drop_in_check.hpp"
#include "mpi_persistent.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>

namespace drop_in {

namespace {

const auto kAll = loom::all_collectives();

// One persistent request of a collective over ints, with its reference result per start.
struct Persistent {
    std::string what;
    std::vector<int> send, recv, counts, displs, scounts, sdispls;
    std::vector<MPI_Datatype> types; // alltoallw: MPI_INT for every peer
    MPI_Request req = MPI_REQUEST_NULL;
    std::function<void(int)> fill;              // send data (and recv for bcast's root) for a start
    std::function<std::vector<int>(int)> expect; // recv's expected contents after that start
};

std::unique_ptr<Persistent> make_persistent(loom::Collective c, int n, MPI_Comm comm)
{
    auto p = std::make_unique<Persistent>();
    Persistent& x = *p;
    x.what = collective_name(c) + "_init of " + std::to_string(n);
    const int P = size, me = rank;
    const auto N = std::size_t(n);
    auto sum_of = [P](int i, int s) {
        int t = 0;
        for (int q = 0; q < P; ++q) t += value(q, i, s);
        return t;
    };
    switch (c) {
    case loom::Collective::allreduce:
        x.send.resize(N), x.recv.resize(N);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, sum_of](int s) { std::vector<int> e(N); for (std::size_t i = 0; i < N; ++i) e[i] = sum_of(int(i), s); return e; };
        PERSISTENT(Allreduce)(x.send.data(), x.recv.data(), n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::reduce:
        x.send.resize(N), x.recv.assign(N, -1);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, me, P, sum_of](int s) {
            std::vector<int> e(N, -1);
            if (me == P - 1) for (std::size_t i = 0; i < N; ++i) e[i] = sum_of(int(i), s);
            return e;
        };
        PERSISTENT(Reduce)(x.send.data(), x.recv.data(), n, MPI_INT, MPI_SUM, P - 1, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::reduce_scatter_block:
        x.send.resize(N * std::size_t(P)), x.recv.resize(N);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, me, sum_of](int s) {
            std::vector<int> e(N);
            for (std::size_t i = 0; i < N; ++i) e[i] = sum_of(int(N * std::size_t(me) + i), s);
            return e;
        };
        PERSISTENT(Reduce_scatter_block)(x.send.data(), x.recv.data(), n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::reduce_scatter: {
        x.counts.resize(std::size_t(P));
        int total = 0, first = 0;
        for (int q = 0; q < P; ++q) {
            x.counts[std::size_t(q)] = n + q % 3;
            if (q < me) first += x.counts[std::size_t(q)];
            total += x.counts[std::size_t(q)];
        }
        const int mine = x.counts[std::size_t(me)];
        x.send.resize(std::size_t(total)), x.recv.resize(std::size_t(mine));
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [mine, first, sum_of](int s) {
            std::vector<int> e(static_cast<std::size_t>(mine));
            for (int i = 0; i < mine; ++i) e[std::size_t(i)] = sum_of(first + i, s);
            return e;
        };
        PERSISTENT(Reduce_scatter)(x.send.data(), x.recv.data(), x.counts.data(), MPI_INT, MPI_SUM, comm, MPI_INFO_NULL,
                                   &x.req);
        break;
    }
    case loom::Collective::allgather:
        x.send.resize(N), x.recv.resize(N * std::size_t(P));
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, P](int s) {
            std::vector<int> e;
            for (int q = 0; q < P; ++q) for (std::size_t i = 0; i < N; ++i) e.push_back(value(q, int(i), s));
            return e;
        };
        PERSISTENT(Allgather)(x.send.data(), n, MPI_INT, x.recv.data(), n, MPI_INT, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::allgatherv: {
        x.counts.resize(std::size_t(P)), x.displs.resize(std::size_t(P));
        int at = 0;
        for (int q = P - 1; q >= 0; --q) { // reversed blocks, one int of gap
            x.counts[std::size_t(q)] = n + q % 2;
            x.displs[std::size_t(q)] = at + 1;
            at += x.counts[std::size_t(q)] + 1;
        }
        x.send.resize(std::size_t(x.counts[std::size_t(me)])), x.recv.assign(std::size_t(at), -1);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [&x, at, P](int s) {
            std::vector<int> e(std::size_t(at), -1);
            for (int q = 0; q < P; ++q)
                for (int i = 0; i < x.counts[std::size_t(q)]; ++i) e[std::size_t(x.displs[std::size_t(q)] + i)] = value(q, i, s);
            return e;
        };
        PERSISTENT(Allgatherv)(x.send.data(), int(x.send.size()), MPI_INT, x.recv.data(), x.counts.data(),
                               x.displs.data(), MPI_INT, comm, MPI_INFO_NULL, &x.req);
        break;
    }
    case loom::Collective::bcast:
        x.recv.resize(N);
        x.fill = [&x, me](int s) {
            for (std::size_t i = 0; i < x.recv.size(); ++i) x.recv[i] = me == 0 ? value(0, int(i), s) : -1;
        };
        x.expect = [N](int s) { std::vector<int> e(N); for (std::size_t i = 0; i < N; ++i) e[i] = value(0, int(i), s); return e; };
        PERSISTENT(Bcast)(x.recv.data(), n, MPI_INT, 0, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::barrier:
        x.fill = [](int) {};
        x.expect = [](int) { return std::vector<int>(); };
        PERSISTENT(Barrier)(comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::scan:
        x.send.resize(N), x.recv.resize(N);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, me](int s) {
            std::vector<int> e(N, 0);
            for (std::size_t i = 0; i < N; ++i)
                for (int q = 0; q <= me; ++q) e[i] += value(q, int(i), s);
            return e;
        };
        PERSISTENT(Scan)(x.send.data(), x.recv.data(), n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::exscan: // rank 0's result is undefined: it keeps the -1 it is given
        x.send.resize(N), x.recv.resize(N);
        x.fill = [&x, me](int s) {
            for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s), x.recv[i] = -1;
        };
        x.expect = [N, me](int s) {
            std::vector<int> e(N, me == 0 ? -1 : 0);
            for (std::size_t i = 0; i < N; ++i)
                for (int q = 0; q < me; ++q) e[i] += value(q, int(i), s);
            return e;
        };
        PERSISTENT(Exscan)(x.send.data(), x.recv.data(), n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::gather: // to the last rank; the others' receive buffers stay -1
        x.send.resize(N), x.recv.assign(N * std::size_t(P), -1);
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, me, P](int s) {
            std::vector<int> e(N * std::size_t(P), -1);
            if (me == P - 1)
                for (int q = 0; q < P; ++q)
                    for (std::size_t i = 0; i < N; ++i) e[std::size_t(q) * N + i] = value(q, int(i), s);
            return e;
        };
        PERSISTENT(Gather)(x.send.data(), n, MPI_INT, x.recv.data(), n, MPI_INT, P - 1, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::scatter: // from the last rank: block q of its send buffer to rank q
        x.send.resize(me == P - 1 ? N * std::size_t(P) : 0), x.recv.resize(N);
        x.fill = [&x, me](int s) {
            for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s);
            std::fill(x.recv.begin(), x.recv.end(), -1);
        };
        x.expect = [N, me, P](int s) {
            std::vector<int> e(N);
            for (std::size_t i = 0; i < N; ++i) e[i] = value(P - 1, int(N * std::size_t(me) + i), s);
            return e;
        };
        PERSISTENT(Scatter)(x.send.data(), n, MPI_INT, x.recv.data(), n, MPI_INT, P - 1, comm, MPI_INFO_NULL, &x.req);
        break;
    case loom::Collective::gatherv: // to rank 0, reversed blocks with a gap; only the root has arrays
    case loom::Collective::scatterv: {
        const bool gather = c == loom::Collective::gatherv;
        x.counts.resize(std::size_t(P)), x.displs.resize(std::size_t(P));
        int at = 0;
        for (int q = P - 1; q >= 0; --q) {
            x.counts[std::size_t(q)] = n + q % 2;
            x.displs[std::size_t(q)] = at + 1;
            at += x.counts[std::size_t(q)] + 1;
        }
        const int mine = x.counts[std::size_t(me)];
        std::vector<int>& whole = gather ? x.recv : x.send;
        std::vector<int>& own = gather ? x.send : x.recv;
        whole.assign(me == 0 ? std::size_t(at) : 0, -1), own.assign(std::size_t(mine), -1);
        x.fill = [&x, me, gather, P](int s) {
            if (gather) {
                for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s);
                std::fill(x.recv.begin(), x.recv.end(), -1);
                return;
            }
            std::fill(x.recv.begin(), x.recv.end(), -1);
            for (int q = 0; q < P && me == 0; ++q)
                for (int i = 0; i < x.counts[std::size_t(q)]; ++i) x.send[std::size_t(x.displs[std::size_t(q)] + i)] = value(q, i, s);
        };
        x.expect = [&x, at, P, me, mine, gather](int s) {
            std::vector<int> e;
            if (!gather) {
                for (int i = 0; i < mine; ++i) e.push_back(value(me, i, s));
                return e;
            }
            if (me != 0) return e;
            e.assign(std::size_t(at), -1);
            for (int q = 0; q < P; ++q)
                for (int i = 0; i < x.counts[std::size_t(q)]; ++i) e[std::size_t(x.displs[std::size_t(q)] + i)] = value(q, i, s);
            return e;
        };
        const int* counts = me == 0 ? x.counts.data() : nullptr;
        const int* displs = me == 0 ? x.displs.data() : nullptr;
        if (gather)
            PERSISTENT(Gatherv)(x.send.data(), mine, MPI_INT, x.recv.data(), counts, displs, MPI_INT, 0, comm, MPI_INFO_NULL,
                                &x.req);
        else
            PERSISTENT(Scatterv)(x.send.data(), counts, displs, MPI_INT, x.recv.data(), mine, MPI_INT, 0, comm,
                                 MPI_INFO_NULL, &x.req);
        break;
    }
    case loom::Collective::alltoallv: // c(from, to) ints from rank from to rank to, blocks end to end
    case loom::Collective::alltoallw: {
        const bool w = c == loom::Collective::alltoallw;
        auto count = [n](int from, int to) { return n + (from * 2 + to) % 3; };
        x.scounts.resize(std::size_t(P)), x.sdispls.resize(std::size_t(P));
        x.counts.resize(std::size_t(P)), x.displs.resize(std::size_t(P));
        int out = 0, in = 0;
        for (int q = 0; q < P; ++q) {
            x.scounts[std::size_t(q)] = count(me, q), x.sdispls[std::size_t(q)] = out, out += count(me, q);
            x.counts[std::size_t(q)] = count(q, me), x.displs[std::size_t(q)] = in, in += count(q, me);
        }
        x.send.resize(std::size_t(out)), x.recv.resize(std::size_t(in));
        x.fill = [&x, me, P](int s) {
            for (int q = 0; q < P; ++q)
                for (int i = 0; i < x.scounts[std::size_t(q)]; ++i)
                    x.send[std::size_t(x.sdispls[std::size_t(q)] + i)] = value(me * 100 + q, i, s);
        };
        x.expect = [&x, me, P](int s) {
            std::vector<int> e;
            for (int q = 0; q < P; ++q)
                for (int i = 0; i < x.counts[std::size_t(q)]; ++i) e.push_back(value(q * 100 + me, i, s));
            return e;
        };
        if (w) {
            x.types.assign(std::size_t(P), MPI_INT);
            for (int& d : x.sdispls) d *= int(sizeof(int));
            for (int& d : x.displs) d *= int(sizeof(int));
            PERSISTENT(Alltoallw)(x.send.data(), x.scounts.data(), x.sdispls.data(), x.types.data(), x.recv.data(),
                                  x.counts.data(), x.displs.data(), x.types.data(), comm, MPI_INFO_NULL, &x.req);
            for (int& d : x.sdispls) d /= int(sizeof(int)); // fill's index again
        } else {
            PERSISTENT(Alltoallv)(x.send.data(), x.scounts.data(), x.sdispls.data(), MPI_INT, x.recv.data(),
                                  x.counts.data(), x.displs.data(), MPI_INT, comm, MPI_INFO_NULL, &x.req);
        }
        break;
    }
    case loom::Collective::alltoall:
        x.send.resize(N * std::size_t(P)), x.recv.resize(N * std::size_t(P));
        x.fill = [&x, me](int s) { for (std::size_t i = 0; i < x.send.size(); ++i) x.send[i] = value(me, int(i), s); };
        x.expect = [N, me, P](int s) {
            std::vector<int> e;
            for (int q = 0; q < P; ++q)
                for (std::size_t i = 0; i < N; ++i) e.push_back(value(q, int(N * std::size_t(me) + i), s));
            return e;
        };
        PERSISTENT(Alltoall)(x.send.data(), n, MPI_INT, x.recv.data(), n, MPI_INT, comm, MPI_INFO_NULL, &x.req);
        break;
    }
    return p;
}

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
        set_control("coll_loom_" + collective_name(kAll[k]) + "_algorithm", forced[k].c_str());
    std::vector<std::unique_ptr<Persistent>> reqs;
    for (loom::Collective c : kAll) reqs.push_back(make_persistent(c, n, MPI_COMM_WORLD));
    for (int start = 0; start < 3; ++start) {
        std::snprintf(where, sizeof where, "part orders, persistent %s, n %d, start %d", label.c_str(), n, start);
        const int salt = start * 13 + n;
        for (auto& r : reqs) r->fill(salt);
        const auto order = order_for(rank, reqs.size(), start);
        // Even ranks make the blocking calls after starting everything, odd ranks before.
        if (rank % 2 == 1) blocking_pair(salt);
        for (std::size_t i : order) MPI_Start(&reqs[i]->req);
        if (rank % 2 == 0) blocking_pair(salt);
        for (std::size_t i : order_for(rank + 1, reqs.size(), start)) MPI_Wait(&reqs[i]->req, MPI_STATUS_IGNORE);
        for (auto& r : reqs)
            if (r->recv != r->expect(salt)) fail(r->what + " started out of order, " + label + ": wrong result");
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
                set_control("coll_loom_" + collective_name(kAll[k]) + "_algorithm", forced[k].c_str());
            nonblocking_round(other, n, label);
        }
    for (loom::Collective c : kAll) set_control("coll_loom_" + collective_name(c) + "_algorithm", "");
    MPI_Comm_free(&other);
}

} // namespace drop_in
