// call_model.hpp: a call of any collective from its row, with its reference.
#include "call_model.hpp"

#include "reduction_reach.hpp"

#include <algorithm>
#include <climits>
#include <string_view>

namespace model {

using loom::Collective;
using loom::Layout;

namespace {

constexpr long kUnchecked = LONG_MIN;

// alltoallw's signature class: a datatype per peer and displacements in bytes.
constexpr bool types_per_peer(Collective c)
{
    switch (c) {
#define LOOM_COLLECTIVE(name, NAME, S, reduces, rooted, layout, Mpi, ...) \
    case Collective::name: return std::string_view(#S) == "exchange_w";
#include "collectives.def"
#undef LOOM_COLLECTIVE
    }
    return false;
}

using loom::tools::Reach;
using loom::tools::reach;

long get(const std::vector<unsigned char>& b, MPI_Datatype t, long i)
{
    if (t == MPI_INT) return reinterpret_cast<const int*>(b.data())[i];
    if (t == MPI_DOUBLE) return long(reinterpret_cast<const double*>(b.data())[i]);
    if (t == MPI_SHORT) return reinterpret_cast<const short*>(b.data())[i];
    return reinterpret_cast<const signed char*>(b.data())[i];
}

void set(std::vector<unsigned char>& b, MPI_Datatype t, long i, int v)
{
    if (t == MPI_INT)
        reinterpret_cast<int*>(b.data())[i] = v;
    else if (t == MPI_DOUBLE)
        reinterpret_cast<double*>(b.data())[i] = v;
    else if (t == MPI_SHORT)
        reinterpret_cast<short*>(b.data())[i] = short(v);
    else
        reinterpret_cast<signed char*>(b.data())[i] = static_cast<signed char>(v);
}

// Element offsets of blocks of `counts`: in rank order end to end, or (gaps) reversed with one
// element before each; *end gets the elements spanned.
std::vector<int> offsets(const std::vector<int>& counts, bool gaps, int* end)
{
    std::vector<int> at(counts.size());
    int next = 0;
    if (!gaps)
        for (std::size_t q = 0; q < counts.size(); ++q) at[q] = next, next += counts[q];
    else
        for (std::size_t q = counts.size(); q-- > 0;) at[q] = next + 1, next += counts[q] + 1;
    *end = next;
    return at;
}

} // namespace

int value(int r, long i, int salt) { return int((long(r) * 7 + i * 3 + long(salt) * 5) % 11) + 1; }

bool has_in_place(Collective c)
{
    // MPI has no in-place form of bcast, barrier or the neighbourhood collectives.
    return loom::layout(c) != Layout::none && !(loom::layout(c) == Layout::vector && !loom::reduces(c)) &&
           loom::counts(c) != loom::Counts::per_neighbour;
}

std::string Spec::text() const
{
    char type_name[MPI_MAX_OBJECT_NAME] = "-";
    int len = 0;
    if (type != MPI_DATATYPE_NULL) MPI_Type_get_name(type, type_name, &len);
    return std::string(loom::to_string(collective)) + " count " + std::to_string(count) + " " + type_name +
           (loom::reduces(collective) ? (op == MPI_MAX ? " max" : " sum") : "") +
           (loom::rooted(collective) ? " root " + std::to_string(root) : "") +
           (in_place && has_in_place(collective) ? " in place" : "") +
           (shift != 0 ? " counts shifted by " + std::to_string(shift) : "") + (gaps ? " with gaps" : "");
}

int Call::pair(int from, int to) const
{
    if (spec.in_place) return spec.count + (std::min(from, to) + 2 * std::max(from, to)) % 3;
    return spec.count + (from + 2 * to) % 3;
}

Call::Call(const Spec& s, MPI_Comm comm) : spec(s)
{
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    MPI_Type_size(s.type, &elem_);
    const Collective c = s.collective;
    const int P = size_, r = rank_;
    const bool root = !loom::rooted(c) || r == s.root;
    here_in_place_ = s.in_place && has_in_place(c) && root;
    blocks_.resize(std::size_t(P));
    for (int q = 0; q < P; ++q)
        blocks_[std::size_t(q)] = loom::per_rank_counts(c) ? s.count + (q + s.shift) % 3 : s.count;
    const int mine = blocks_[std::size_t(r)];
    const bool gaps = s.gaps && loom::per_rank_counts(c); // only displacements can leave gaps
    int end = 0;
    args = loom::tools::CallArgs{.count = s.count, .scount = s.count, .rcount = s.count, .type = s.type,
                                 .stype = s.type, .rtype = s.type, .op = s.op, .root = s.root, .comm = comm};
    has_result_ = true;
    switch (loom::layout(c)) {
    case Layout::vector:
        send_n_ = s.count, recv_n_ = s.count;
        if (loom::reduces(c))
            has_result_ = root && !(reach(c) == Reach::exclusive_prefix && r == 0);
        break;
    case Layout::split:
        rat_ = offsets(blocks_, false, &end);
        send_n_ = end, recv_n_ = here_in_place_ ? end : mine;
        args.rcounts = blocks_.data();
        break;
    case Layout::gathered:
        rcounts_ = blocks_;
        rat_ = offsets(blocks_, gaps, &end);
        rdispls_ = rat_;
        has_result_ = root;
        send_n_ = mine, recv_n_ = root ? end : 0;
        args.scount = mine;
        if (root || !loom::counts_at_root_only(c)) args.rcounts = rcounts_.data(), args.rdispls = rdispls_.data();
        break;
    case Layout::scattered:
        scounts_ = blocks_;
        sat_ = offsets(blocks_, gaps, &end);
        sdispls_ = sat_;
        has_result_ = !here_in_place_;
        send_n_ = r == s.root ? end : 0, recv_n_ = mine;
        args.rcount = mine;
        if (r == s.root || !loom::counts_at_root_only(c)) args.scounts = scounts_.data(), args.sdispls = sdispls_.data();
        break;
    case Layout::per_peer:
    case Layout::per_peer_v: {
        scounts_.resize(std::size_t(P)), rcounts_.resize(std::size_t(P));
        for (int q = 0; q < P; ++q) {
            const bool v = loom::layout(c) == Layout::per_peer_v;
            scounts_[std::size_t(q)] = v ? pair(r, q) : s.count;
            rcounts_[std::size_t(q)] = v ? pair(q, r) : s.count;
        }
        int send_end = 0;
        sat_ = offsets(scounts_, false, &send_end);
        rat_ = offsets(rcounts_, false, &end);
        send_n_ = send_end, recv_n_ = end;
        sdispls_ = sat_, rdispls_ = rat_;
        if (types_per_peer(c)) {
            for (int& d : sdispls_) d *= elem_;
            for (int& d : rdispls_) d *= elem_;
            types_.assign(std::size_t(P), s.type);
            args.stypes = args.rtypes = types_.data();
        }
        args.scounts = scounts_.data(), args.sdispls = sdispls_.data();
        args.rcounts = rcounts_.data(), args.rdispls = rdispls_.data();
        break;
    }
    case Layout::neighbour_gathered:
    case Layout::per_neighbour: {
        int status = MPI_UNDEFINED;
        MPI_Topo_test(comm, &status);
        if (status == MPI_UNDEFINED) {
            topology_ = loom::test::cartesian({P}, {1});
            const int dims[1] = {P}, periods[1] = {1};
            MPI_Cart_create(comm, 1, dims, periods, 0, &own_comm_);
            args.comm = own_comm_;
        } else {
            topology_ = neighbours::read(comm);
        }
        const bool one = loom::layout(c) == Layout::neighbour_gathered;
        const std::size_t out = one ? 1 : topology_.destinations[std::size_t(r)].size();
        scounts_.assign(out, s.count);
        rcounts_.assign(topology_.sources[std::size_t(r)].size(), s.count);
        int send_end = 0;
        sat_ = offsets(scounts_, false, &send_end);
        rat_ = offsets(rcounts_, false, &end);
        send_n_ = send_end, recv_n_ = end;
        sdispls_ = sat_, rdispls_ = rat_;
        for (int d : sdispls_) sadispls_.push_back(MPI_Aint(d) * elem_);
        for (int d : rdispls_) radispls_.push_back(MPI_Aint(d) * elem_);
        types_.assign(std::max(scounts_.size(), rcounts_.size()) + 1, s.type);
        scounts_.push_back(0), rcounts_.push_back(0), sdispls_.push_back(0), rdispls_.push_back(0);
        sadispls_.push_back(0), radispls_.push_back(0); // never an empty array
        args.scounts = scounts_.data(), args.sdispls = sdispls_.data();
        args.rcounts = rcounts_.data(), args.rdispls = rdispls_.data();
        args.stypes = args.rtypes = types_.data();
        args.sadispls = sadispls_.data(), args.radispls = radispls_.data();
        scounts_.pop_back(), rcounts_.pop_back(); // (the arrays keep their storage)
        break;
    }
    case Layout::none: break;
    }
    // At least one element each, so that no buffer of a call is a null pointer.
    send_.resize(std::size_t(std::max(1L, send_n_) * elem_));
    recv_.resize(std::size_t(std::max(1L, recv_n_) * elem_));
    args.sbuf = here_in_place_ ? MPI_IN_PLACE : send_.data();
    args.rbuf = loom::layout(c) == Layout::scattered && here_in_place_ ? MPI_IN_PLACE : recv_.data();
    if (loom::layout(c) == Layout::scattered) args.sbuf = send_.data(); // scatter's in place is the receive side
}

Call::~Call()
{
    if (own_comm_ != MPI_COMM_NULL) MPI_Comm_free(&own_comm_);
}

void Call::fill(int salt)
{
    const Collective c = spec.collective;
    const int P = size_, r = rank_;
    for (long i = 0; i < recv_n_; ++i) set(recv_, spec.type, i, -1);
    for (long i = 0; i < send_n_; ++i) set(send_, spec.type, i, -1);
    // Inputs go to the send buffer, or in place to the receive buffer where MPI reads them.
    std::vector<unsigned char>& in = here_in_place_ && loom::layout(c) != Layout::scattered ? recv_ : send_;
    switch (loom::layout(c)) {
    case Layout::vector:
        if (!loom::reduces(c)) { // bcast: the root's buffer
            for (long i = 0; r == spec.root && i < spec.count; ++i) set(recv_, spec.type, i, value(r, i, salt));
            return;
        }
        for (long i = 0; i < spec.count; ++i) set(in, spec.type, i, value(r, i, salt));
        return;
    case Layout::split:
        for (long i = 0; i < send_n_; ++i) set(in, spec.type, i, value(r, i, salt));
        return;
    case Layout::gathered: {
        const long at = here_in_place_ ? rat_[std::size_t(r)] : 0;
        for (long i = 0; i < blocks_[std::size_t(r)]; ++i) set(in, spec.type, at + i, value(r, i, salt));
        return;
    }
    case Layout::scattered:
        for (int q = 0; r == spec.root && q < P; ++q)
            for (long i = 0; i < blocks_[std::size_t(q)]; ++i)
                set(send_, spec.type, sat_[std::size_t(q)] + i, value(q, i, salt));
        return;
    case Layout::per_peer:
    case Layout::per_peer_v:
        for (int q = 0; q < P; ++q)
            for (long i = 0; i < scounts_[std::size_t(q)]; ++i)
                set(in, spec.type, sat_[std::size_t(q)] + i, value(r * P + q, i, salt));
        return;
    case Layout::neighbour_gathered:
    case Layout::per_neighbour: // send block b: value(r * 1024 + b)
        for (std::size_t b = 0; b < scounts_.size(); ++b)
            for (long i = 0; i < scounts_[b]; ++i) set(send_, spec.type, sat_[b] + i, value(r * 1024 + int(b), i, salt));
        return;
    case Layout::none: return;
    }
}

// What element i of the receive buffer must hold after call `salt`: the result, -1 (untouched),
// or kUnchecked (an in-place call's input outside its result).
long Call::expected(long i, int salt) const
{
    const Collective c = spec.collective;
    const int P = size_, r = rank_;
    const long untouched = here_in_place_ ? kUnchecked : -1;
    if (!has_result_) return untouched;
    auto reduced = [&](int from, int to, long at) { // ranks [from, to) at element `at`
        long acc = value(from, at, salt);
        for (int q = from + 1; q < to; ++q) acc = spec.op == MPI_MAX ? std::max<long>(acc, value(q, at, salt)) : acc + value(q, at, salt);
        return acc;
    };
    // Which block of per-rank blocks at `at` element i lies in (and where in it); -1 in a gap.
    auto block_of = [&](const std::vector<int>& at, const std::vector<int>& counts, long* k) {
        for (int q = 0; q < P; ++q)
            if (i >= at[std::size_t(q)] && i < at[std::size_t(q)] + counts[std::size_t(q)]) {
                *k = i - at[std::size_t(q)];
                return q;
            }
        return -1;
    };
    long k = 0;
    switch (loom::layout(c)) {
    case Layout::vector:
        if (!loom::reduces(c)) return value(spec.root, i, salt);
        return reach(c) == Reach::all ? reduced(0, P, i)
               : reach(c) == Reach::inclusive_prefix ? reduced(0, r + 1, i)
                                                     : reduced(0, r, i);
    case Layout::split:
        return i < blocks_[std::size_t(r)] ? reduced(0, P, rat_[std::size_t(r)] + i) : untouched;
    case Layout::gathered: {
        const int q = block_of(rat_, blocks_, &k);
        return q < 0 ? untouched : value(q, k, salt);
    }
    case Layout::scattered: return value(r, i, salt);
    case Layout::per_peer:
    case Layout::per_peer_v: {
        const int q = block_of(rat_, rcounts_, &k);
        return q < 0 ? untouched : value(q * P + r, k, salt);
    }
    case Layout::neighbour_gathered:
    case Layout::per_neighbour:
        for (std::size_t j = 0; j < rcounts_.size(); ++j)
            if (i >= rat_[j] && i < rat_[j] + rcounts_[j]) {
                const loom::test::BlockSource from = loom::test::block_source(topology_, r, int(j));
                if (from.rank < 0) return untouched; // MPI_PROC_NULL
                const int block = loom::layout(c) == Layout::neighbour_gathered ? 0 : from.block;
                return value(from.rank * 1024 + block, i - rat_[j], salt);
            }
        return untouched;
    case Layout::none: return untouched;
    }
    return untouched;
}

loom::tools::CallArgs Call::args_on(const void* send, void* recv) const
{
    loom::tools::CallArgs a = args;
    if (a.sbuf != MPI_IN_PLACE) a.sbuf = send;
    if (a.rbuf != MPI_IN_PLACE) a.rbuf = recv;
    return a;
}

std::string Call::check(int salt) const
{
    const long n = recv_n_;
    for (long i = 0; i < n; ++i) {
        const long want = expected(i, salt);
        if (want == kUnchecked) continue;
        const long got = get(recv_, spec.type, i);
        if (got != want)
            return spec.text() + ": element " + std::to_string(i) + " of " + std::to_string(n) + " is " +
                   std::to_string(got) + ", expected " + std::to_string(want);
    }
    return "";
}

} // namespace model
