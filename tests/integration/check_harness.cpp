#include "check_harness.hpp"

#include "loom_mpi_t.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

namespace check {

int failures = 0;
int cases = 0;
int handed_on = 0;
bool counters_checked = true;

namespace {
std::map<std::string, loom::tools::LoomCounters> counters;

loom::tools::LoomCounters& counters_of(const char* collective)
{
    auto it = counters.find(collective);
    if (it == counters.end()) {
        it = counters.emplace(collective, loom::tools::LoomCounters{}).first;
        if (!it->second.open(collective)) {
            std::fprintf(stderr, "FAIL: loom's MPI_T counters for %s are missing: loom is not loaded\n", collective);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    return it->second;
}
} // namespace

void fail(const Setting& s, const std::string& what)
{
    if (failures < 30)
        std::fprintf(stderr, "FAIL (rank %d of %d, algorithm '%s'): %s\n", s.rank, s.size, s.algorithm.c_str(),
                     what.c_str());
    ++failures;
}

void expect_call(const Setting& s, const char* collective, Expect expect, const std::string& name,
                 const std::function<void()>& call)
{
    auto& c = counters_of(form_name(collective).c_str());
    // A forced algorithm that cannot serve the communicator hands the call on (its result is
    // still checked): one that needs one node across nodes, equal nodes on unequal ones, a
    // shared segment where loom may set up none, single copy where a rank refuses it. A forced
    // shm makes the segment in every form: a blocking call and a persistent request's init at
    // once, a non-blocking call by starting its set-up, which the call itself then waits for
    // (coll_loom_call.c). Single copy serves blocking calls only (coll_loom_call.c). combining
    // serves stencils only (the topology communicator's Topology says).
    const loom::Algorithm* forced = s.algorithm.empty() ? nullptr : algorithm_named(collective, s.algorithm);
    const bool segments = s.segments;
    const bool single_copy = s.single_copy && s.segments && form == Form::blocking;
    const bool cannot_serve =
        forced != nullptr &&
        ((forced->needs.same_node && s.nodes > 1) || (forced->needs.equal_nodes && !s.equal_nodes) ||
         (forced->needs.segment && !segments) || (forced->needs.single_copy && !single_copy) ||
         (forced->needs.stencil && !s.stencil));
    if (expect == Expect::served && cannot_serve) expect = Expect::declined;
    if (expect == Expect::kept) expect = Expect::served;
    const auto served0 = c.served(), declined0 = c.declined();
    call();
    ++cases;
    if (!counters_checked) return;
    const auto served = c.served() - served0, declined = c.declined() - declined0;
    // Open MPI's MPI layer returns at once from a blocking call with no data, but passes some
    // non-blocking and persistent ones on (iallgather, ialltoall): loom sees those, and serves
    // or hands them on.
    if (expect == Expect::untouched && form != Form::blocking && s.size >= 2) {
        if (served + declined > 1)
            fail(s, form_name(collective) + " " + name + ": loom served " + std::to_string(served) + " and declined " +
                        std::to_string(declined) + " calls, expected at most one of them");
        return;
    }
    // On one rank coll/self serves the call: loom takes part only from two ranks on.
    const bool seen = s.size >= 2 && expect != Expect::untouched;
    const unsigned long long want_served = seen && expect == Expect::served;
    const unsigned long long want_declined = seen && expect == Expect::declined;
    // With loom's own choice the built-in table may say `fallback` (Open MPI measured faster
    // there): a call loom could serve is then handed on, and the result is checked all the same.
    if (s.algorithm.empty() && want_served == 1 && served == 0 && declined == 1) {
        ++handed_on;
        return;
    }
    if (served != want_served || declined != want_declined)
        fail(s, form_name(collective) + " " + name + ": loom served " + std::to_string(served) + " and declined " +
                    std::to_string(declined) + " calls, expected " + std::to_string(want_served) + " and " +
                    std::to_string(want_declined));
}

bool needs_commutative(const std::string& collective, const std::string& algorithm)
{
    if (!algorithm.empty()) {
        const loom::Algorithm* a = algorithm_named(collective, algorithm);
        return a != nullptr && a->needs.commutative_op;
    }
    for (const loom::Algorithm& a : loom::all_algorithms())
        if (loom::to_string(a.collective) == collective && !a.needs.commutative_op) return false;
    return true; // every algorithm of the collective reorders: loom hands a non-commutative op on
}

const loom::Algorithm* algorithm_named(const std::string& collective, const std::string& forced)
{
    const std::string name = forced.substr(0, forced.find('@')); // "pat@256": pat
    for (const loom::Algorithm& a : loom::all_algorithms())
        if (loom::to_string(a.collective) == collective && a.name == name) return &a;
    return nullptr;
}

void user_int_sum(void* in, void* inout, int* len, MPI_Datatype*)
{
    auto* a = static_cast<int*>(in);
    auto* b = static_cast<int*>(inout);
    for (int i = 0; i < *len; ++i) b[i] += a[i];
}

void user_holey_sum(void* in, void* inout, int* len, MPI_Datatype* type)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*type, &lb, &extent);
    for (int e = 0; e < *len; ++e) {
        auto* a = reinterpret_cast<int*>(static_cast<char*>(in) + e * extent);
        auto* b = reinterpret_cast<int*>(static_cast<char*>(inout) + e * extent);
        b[0] += a[0];
        b[2] += a[2];
    }
}

void user_matmul(void* in, void* inout, int* len, MPI_Datatype*)
{
    auto* a = static_cast<std::uint32_t*>(in);
    auto* b = static_cast<std::uint32_t*>(inout);
    for (int e = 0; e < *len; ++e, a += 4, b += 4) {
        const std::uint32_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                                    a[2] * b[1] + a[3] * b[3]};
        std::memcpy(b, c, sizeof c);
    }
}

std::vector<std::uint32_t> matrix(int r, std::size_t e)
{
    const std::uint32_t v = std::uint32_t(r) + std::uint32_t(e);
    return {1, v + 1, v % 3, 1};
}

HoleyTypes make_holey_types()
{
    HoleyTypes t;
    MPI_Type_vector(2, 1, 2, MPI_INT, &t.vector);
    MPI_Type_create_resized(t.vector, 0, 16, &t.padded);
    MPI_Type_commit(&t.vector);
    MPI_Type_commit(&t.padded);
    return t;
}

void free_holey_types(HoleyTypes& t)
{
    MPI_Type_free(&t.vector);
    MPI_Type_free(&t.padded);
}

} // namespace check
