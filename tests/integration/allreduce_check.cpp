// End-to-end check of MPI_Allreduce through loom, run under mpirun by tests/integration/
// run-mpi-test. Every rank computes every rank's input itself, so the reference result is
// computed by this program, never by Open MPI (whose AVX op component gets unsigned 8-bit
// sums wrong on this machine). Each case also reads loom's MPI_T counters
// coll_loom_allreduce_served / _declined, proving that loom, not tuned, served the call, or
// that it declined (and the fallback still gave the right answer).

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "loom_counters.hpp"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace {

loom::tools::LoomCounters counters;
int failures = 0, cases = 0;

// What must have happened to one call. Open MPI's MPI layer returns from a count-0
// allreduce before any coll component sees it: that is `untouched`.
enum class Expect { served, declined, untouched };

void fail(MPI_Comm comm, const std::string& what)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (failures < 20) std::fprintf(stderr, "FAIL (rank %d): %s\n", rank, what.c_str());
    ++failures;
}

// Run one MPI_Allreduce and check who served it.
void call(MPI_Comm comm, const std::string& name, Expect expect, const std::function<void()>& allreduce)
{
    int size;
    MPI_Comm_size(comm, &size);
    const auto served0 = counters.served();
    const auto declined0 = counters.declined();
    allreduce();
    ++cases;
    const auto served = counters.served() - served0, declined = counters.declined() - declined0;
    // On one rank coll/self serves the call; loom takes part only from two ranks on.
    const bool loom_active = size >= 2 && expect != Expect::untouched;
    const unsigned long long want_served = loom_active && expect == Expect::served;
    const unsigned long long want_declined = loom_active && expect == Expect::declined;
    if (served != want_served || declined != want_declined)
        fail(comm, name + ": loom served " + std::to_string(served) + " and declined " +
                       std::to_string(declined) + " calls, expected " + std::to_string(want_served) +
                       " and " + std::to_string(want_declined));
}

// ---- predefined types and ops -------------------------------------------------------------
template <class T> MPI_Datatype mpi_type();
template <> MPI_Datatype mpi_type<int>() { return MPI_INT; }
template <> MPI_Datatype mpi_type<std::int64_t>() { return MPI_INT64_T; }
template <> MPI_Datatype mpi_type<std::uint8_t>() { return MPI_UINT8_T; }
template <> MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <> MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }

struct OpCase {
    MPI_Op op;
    const char* name;
};

// The reference for one element: MPI semantics, integers wrapping.
template <class T>
T combine(MPI_Op op, T a, T b)
{
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        if (op == MPI_SUM) return T(U(a) + U(b));
        if (op == MPI_PROD) return T(U(a) * U(b));
        if (op == MPI_LAND) return T(a && b);
        if (op == MPI_LOR) return T(a || b);
        if (op == MPI_LXOR) return T(!a != !b);
        if (op == MPI_BAND) return T(a & b);
        if (op == MPI_BOR) return T(a | b);
        if (op == MPI_BXOR) return T(a ^ b);
    } else {
        if (op == MPI_SUM) return a + b;
        if (op == MPI_PROD) return a * b;
    }
    if (op == MPI_MIN) return b < a ? b : a;
    if (op == MPI_MAX) return a < b ? b : a;
    return T(0);
}

// Rank r's element i. Chosen so float sums and products are exact in any order: small
// integers for sums, powers of two (1, 2, 1/2) for products; zeros appear for logical ops.
template <class T>
T input(MPI_Op op, int r, std::size_t i)
{
    const int v = int((std::size_t(r) * 7 + i * 3) % 11);
    if (op == MPI_PROD) {
        if constexpr (std::is_floating_point_v<T>) return v % 3 == 0 ? T(1) : v % 3 == 1 ? T(2) : T(0.5);
        return T(v % 3 + 1);
    }
    if constexpr (std::is_same_v<T, std::uint8_t>) return T(200 + v * 5); // sums wrap past 255
    return T(v - 4);
}

template <class T>
void check_predefined(MPI_Comm comm, OpCase op, std::size_t count, bool in_place)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    std::vector<T> send(count), recv(count, T(77)), expected(count);
    for (std::size_t i = 0; i < count; ++i) {
        send[i] = input<T>(op.op, rank, i);
        T acc = input<T>(op.op, 0, i);
        for (int r = 1; r < size; ++r) acc = combine<T>(op.op, acc, input<T>(op.op, r, i));
        expected[i] = acc;
    }
    const std::string name = std::string("allreduce ") + op.name + " count=" + std::to_string(count) +
                             " type_size=" + std::to_string(sizeof(T)) + (in_place ? " in-place" : "");
    call(comm, name, count == 0 ? Expect::untouched : Expect::served, [&] {
        if (in_place) MPI_Allreduce(MPI_IN_PLACE, send.data(), int(count), mpi_type<T>(), op.op, comm);
        else MPI_Allreduce(send.data(), recv.data(), int(count), mpi_type<T>(), op.op, comm);
    });
    const std::vector<T>& got = in_place ? send : recv;
    for (std::size_t i = 0; i < count; ++i) {
        if (got[i] != expected[i]) {
            fail(comm, name + ": element " + std::to_string(i) + " is " + std::to_string(double(got[i])) +
                           ", expected " + std::to_string(double(expected[i])));
            return;
        }
    }
}

std::vector<std::size_t> counts_for(int size)
{
    return {0, 1, std::size_t(size > 1 ? size - 1 : 2), std::size_t(size), std::size_t(size + 1), 37, 1000, 65539};
}

template <class T>
void check_type(MPI_Comm comm, const std::vector<OpCase>& ops)
{
    int size;
    MPI_Comm_size(comm, &size);
    for (const OpCase& op : ops)
        for (std::size_t count : counts_for(size))
            for (bool in_place : {false, true}) check_predefined<T>(comm, op, count, in_place);
}

// ---- MINLOC / MAXLOC on value-index pairs -------------------------------------------------
template <class V>
struct Pair {
    V value;
    int index;
};

template <class V>
void check_loc(MPI_Comm comm, MPI_Datatype type, MPI_Op op, const char* name)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (std::size_t count : counts_for(size)) {
        auto value = [](int r, std::size_t i) { return V(int((std::size_t(r) * 5 + i) % 4)); };
        std::vector<Pair<V>> send(count), recv(count), expected(count);
        for (std::size_t i = 0; i < count; ++i) {
            send[i] = {value(rank, i), rank};
            Pair<V> best{value(0, i), 0};
            for (int r = 1; r < size; ++r) {
                const V v = value(r, i);
                if (op == MPI_MINLOC ? v < best.value : v > best.value) best = {v, r};
            }
            expected[i] = best;
        }
        const std::string what = std::string("allreduce ") + name + " count=" + std::to_string(count);
        call(comm, what, count == 0 ? Expect::untouched : Expect::served,
             [&] { MPI_Allreduce(send.data(), recv.data(), int(count), type, op, comm); });
        for (std::size_t i = 0; i < count; ++i)
            if (recv[i].value != expected[i].value || recv[i].index != expected[i].index) {
                fail(comm, what + ": wrong pair at element " + std::to_string(i));
                break;
            }
    }
}

// ---- user-defined ops ---------------------------------------------------------------------
// A commutative user op on MPI_INT: served by loom through Open MPI's op machinery.
void user_int_sum(void* in, void* inout, int* len, MPI_Datatype*)
{
    auto* a = static_cast<int*>(in);
    auto* b = static_cast<int*>(inout);
    for (int i = 0; i < *len; ++i) b[i] += a[i];
}

// A commutative user op on a strided vector type (2 ints with a hole between them): loom
// must reduce only the ints and never write the holes of the receive buffer.
void user_vector_sum(void* in, void* inout, int* len, MPI_Datatype* type)
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

// A non-commutative (associative) op: 2x2 integer matrix product, a x b, on 4 ints.
void user_matmul(void* in, void* inout, int* len, MPI_Datatype*)
{
    auto* a = static_cast<std::uint32_t*>(in);
    auto* b = static_cast<std::uint32_t*>(inout);
    for (int e = 0; e < *len; ++e, a += 4, b += 4) {
        const std::uint32_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                                    a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        std::memcpy(b, c, sizeof c);
    }
}

void check_user_ops(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    MPI_Op sum_op;
    MPI_Op_create(user_int_sum, 1, &sum_op);
    for (std::size_t count : counts_for(size)) {
        std::vector<int> send(count), recv(count, -1), expected(count, 0);
        for (std::size_t i = 0; i < count; ++i) {
            send[i] = int(i) * (rank + 1);
            for (int r = 0; r < size; ++r) expected[i] += int(i) * (r + 1);
        }
        const std::string what = "allreduce user commutative sum count=" + std::to_string(count);
        call(comm, what, count == 0 ? Expect::untouched : Expect::served,
             [&] { MPI_Allreduce(send.data(), recv.data(), int(count), MPI_INT, sum_op, comm); });
        if (recv != expected) fail(comm, what + ": wrong result");
    }
    MPI_Op_free(&sum_op);

    // Vector type: ints at offsets 0 and 8 of a 12-byte element, and the same resized to
    // 16 bytes (a hole at the end too). The holes hold a sentinel that must survive.
    MPI_Datatype vec, padded;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 16, &padded);
    MPI_Type_commit(&vec);
    MPI_Type_commit(&padded);
    MPI_Op vsum;
    MPI_Op_create(user_vector_sum, 1, &vsum);
    for (auto [type, ints] : {std::pair{vec, 3}, std::pair{padded, 4}}) {
        for (std::size_t count : {std::size_t(1), std::size_t(size + 1), std::size_t(1001)}) {
            for (bool in_place : {false, true}) {
                const int sentinel = -12345;
                std::vector<int> send(count * ints, sentinel), recv(count * ints, sentinel);
                for (std::size_t e = 0; e < count; ++e) {
                    send[e * ints] = int(e) + rank;
                    send[e * ints + 2] = 2 * rank - int(e);
                }
                const std::string what = std::string("allreduce user op on ") +
                                         (ints == 3 ? "vector" : "resized vector") +
                                         " count=" + std::to_string(count) + (in_place ? " in-place" : "");
                call(comm, what, Expect::served, [&] {
                    if (in_place) MPI_Allreduce(MPI_IN_PLACE, send.data(), int(count), type, vsum, comm);
                    else MPI_Allreduce(send.data(), recv.data(), int(count), type, vsum, comm);
                });
                const std::vector<int>& got = in_place ? send : recv;
                const int rank_sum = size * (size - 1) / 2;
                for (std::size_t e = 0; e < count; ++e) {
                    const bool ok = got[e * ints] == int(e) * size + rank_sum &&
                                    got[e * ints + 2] == 2 * rank_sum - int(e) * size &&
                                    got[e * ints + 1] == sentinel && (ints == 3 || got[e * ints + 3] == sentinel);
                    if (!ok) {
                        fail(comm, what + ": wrong data or a hole was written at element " + std::to_string(e));
                        break;
                    }
                }
            }
        }
    }
    MPI_Op_free(&vsum);
    MPI_Type_free(&vec);
    MPI_Type_free(&padded);

    // Non-commutative: loom must decline, and the fallback must give the rank-ordered product.
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
    MPI_Type_commit(&mat);
    MPI_Op matmul;
    MPI_Op_create(user_matmul, 0, &matmul);
    auto matrix = [](int r, std::size_t e) {
        const std::uint32_t v = std::uint32_t(r + e);
        return std::vector<std::uint32_t>{1, v + 1, v % 3, 1};
    };
    for (std::size_t count : {std::size_t(1), std::size_t(size), std::size_t(100)}) {
        std::vector<std::uint32_t> send, recv(4 * count), expected;
        for (std::size_t e = 0; e < count; ++e) {
            auto m = matrix(rank, e);
            send.insert(send.end(), m.begin(), m.end());
            std::vector<std::uint32_t> acc = matrix(size - 1, e);
            for (int r = size - 2; r >= 0; --r) {
                int one = 1;
                auto lhs = matrix(r, e);
                user_matmul(lhs.data(), acc.data(), &one, nullptr); // acc = m_r x acc
            }
            expected.insert(expected.end(), acc.begin(), acc.end());
        }
        const std::string what = "allreduce non-commutative matmul count=" + std::to_string(count);
        call(comm, what, Expect::declined,
             [&] { MPI_Allreduce(send.data(), recv.data(), int(count), mat, matmul, comm); });
        if (recv != expected) fail(comm, what + ": not the rank-ordered product");
    }
    MPI_Op_free(&matmul);
    MPI_Type_free(&mat);
}

void check_communicator(MPI_Comm comm)
{
    const std::vector<OpCase> int_ops = {{MPI_SUM, "SUM"},   {MPI_PROD, "PROD"}, {MPI_MIN, "MIN"},
                                         {MPI_MAX, "MAX"},   {MPI_LAND, "LAND"}, {MPI_LOR, "LOR"},
                                         {MPI_LXOR, "LXOR"}, {MPI_BAND, "BAND"}, {MPI_BOR, "BOR"},
                                         {MPI_BXOR, "BXOR"}};
    const std::vector<OpCase> float_ops = {{MPI_SUM, "SUM"}, {MPI_PROD, "PROD"}, {MPI_MIN, "MIN"}, {MPI_MAX, "MAX"}};
    check_type<int>(comm, int_ops);
    check_type<std::int64_t>(comm, int_ops);
    check_type<float>(comm, float_ops);
    check_type<double>(comm, float_ops);
    check_type<std::uint8_t>(comm, {{MPI_SUM, "SUM (uint8, wraps)"}});
    check_loc<int>(comm, MPI_2INT, MPI_MINLOC, "MINLOC 2INT");
    check_loc<double>(comm, MPI_DOUBLE_INT, MPI_MAXLOC, "MAXLOC DOUBLE_INT");
    check_user_ops(comm);
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!counters.open("allreduce")) {
        if (rank == 0) std::fprintf(stderr, "FAIL: loom's MPI_T counters are missing: loom is not loaded\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    check_communicator(MPI_COMM_WORLD);
    // A split, reordered communicator: even and odd ranks, in reverse order.
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split);
    check_communicator(split);
    MPI_Comm_free(&split);

    int total_failures = 0, total_cases = 0;
    MPI_Reduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&cases, &total_cases, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("allreduce_check np=%d: %d rank-cases passed, %d failed\n", size,
                    total_cases - total_failures, total_failures);
    MPI_Finalize();
    return total_failures == 0 ? 0 : 1;
}
