// Checks of the reducing collectives: allreduce, reduce, reduce_scatter_block,
// reduce_scatter and scan, each against a reference computed from every rank's known input.
#include "check_harness.hpp"

#include <cstring>
#include <functional>
#include <type_traits>

namespace check {

namespace {

struct OpCase {
    MPI_Op op;
    const char* name;
};
const std::vector<OpCase> kIntOps = {{MPI_SUM, "SUM"},   {MPI_PROD, "PROD"}, {MPI_MIN, "MIN"},   {MPI_MAX, "MAX"},
                                     {MPI_LAND, "LAND"}, {MPI_LOR, "LOR"},   {MPI_LXOR, "LXOR"}, {MPI_BAND, "BAND"},
                                     {MPI_BOR, "BOR"},   {MPI_BXOR, "BXOR"}};
const std::vector<OpCase> kFloatOps = {{MPI_SUM, "SUM"}, {MPI_PROD, "PROD"}, {MPI_MIN, "MIN"}, {MPI_MAX, "MAX"}};

// The reduction over all ranks of element i, in rank order.
template <class T>
T reference(MPI_Op op, int size, std::size_t i)
{
    T acc = input<T>(op, 0, i);
    for (int r = 1; r < size; ++r) acc = combine<T>(op, acc, input<T>(op, r, i));
    return acc;
}

template <class T>
bool same(const T* got, MPI_Op op, int size, std::size_t first, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i)
        if (got[i] != reference<T>(op, size, first + i)) return false;
    return true;
}

std::string describe(const char* what, OpCase op, std::size_t type_size, int count, bool in_place)
{
    return std::string(what) + " " + op.name + " type_size=" + std::to_string(type_size) +
           " count=" + std::to_string(count) + (in_place ? " in-place" : "");
}

// ---- allreduce ----
template <class T>
void allreduce_predefined(const Setting& s, const std::vector<OpCase>& ops)
{
    for (const OpCase& op : ops)
        for (int count : counts_for(s.size))
            for (bool in_place : {false, true}) {
                std::vector<T> send(static_cast<std::size_t>(count)), recv(std::size_t(count), T(77));
                for (std::size_t i = 0; i < send.size(); ++i) send[i] = input<T>(op.op, s.rank, i);
                const std::string name = describe("", op, sizeof(T), count, in_place);
                // loom keeps 8- and 16-bit integer sums from Open MPI (its kernel saturates them).
                const bool kept = std::is_integral_v<T> && sizeof(T) <= 2 && op.op == MPI_SUM;
                const Expect expect = count == 0 ? Expect::untouched : kept ? Expect::kept : Expect::served;
                expect_call(s, "allreduce", expect, name, [&] {
                    if (in_place)
                        allreduce(MPI_IN_PLACE, send.data(), count, mpi_type<T>(), op.op, s.comm);
                    else
                        allreduce(send.data(), recv.data(), count, mpi_type<T>(), op.op, s.comm);
                });
                if (!same<T>((in_place ? send : recv).data(), op.op, s.size, 0, std::size_t(count)))
                    fail(s, "allreduce" + name + ": wrong result");
            }
}

template <class V>
struct Pair {
    V value;
    int index;
};

template <class V>
void allreduce_loc(const Setting& s, MPI_Datatype type, MPI_Op op, const char* name)
{
    for (int count : counts_for(s.size)) {
        auto value = [](int r, std::size_t i) { return V(int((std::size_t(r) * 5 + i) % 4)); };
        std::vector<Pair<V>> send(static_cast<std::size_t>(count)), recv(static_cast<std::size_t>(count));
        bool ok = true;
        for (std::size_t i = 0; i < send.size(); ++i) send[i] = {value(s.rank, i), s.rank};
        const std::string what = std::string(name) + " count=" + std::to_string(count);
        expect_call(s, "allreduce", count == 0 ? Expect::untouched : Expect::served, what,
                    [&] { allreduce(send.data(), recv.data(), count, type, op, s.comm); });
        for (std::size_t i = 0; i < recv.size() && ok; ++i) {
            Pair<V> best{value(0, i), 0};
            for (int r = 1; r < s.size; ++r)
                if (op == MPI_MINLOC ? value(r, i) < best.value : value(r, i) > best.value) best = {value(r, i), r};
            ok = recv[i].value == best.value && recv[i].index == best.index;
        }
        if (!ok) fail(s, "allreduce " + what + ": wrong pair");
    }
}

// The holey types with a commutative user op: the ints are reduced, the holes untouched.
void allreduce_holey(const Setting& s)
{
    HoleyTypes types = make_holey_types();
    MPI_Op op;
    MPI_Op_create(user_holey_sum, 1, &op);
    const int sentinel = -12345;
    for (auto [type, ints] : {std::pair{types.vector, 3}, std::pair{types.padded, 4}})
        for (int count : {1, s.size + 1, 1001})
            for (bool in_place : {false, true}) {
                const std::size_t n = std::size_t(count) * std::size_t(ints);
                std::vector<int> send(n, sentinel), recv(n, sentinel);
                for (int e = 0; e < count; ++e) {
                    send[std::size_t(e * ints)] = e + s.rank;
                    send[std::size_t(e * ints + 2)] = 2 * s.rank - e;
                }
                const std::string what = std::string("user op on ") + (ints == 3 ? "vector" : "resized vector") +
                                         " count=" + std::to_string(count) + (in_place ? " in-place" : "");
                expect_call(s, "allreduce", Expect::served, what, [&] {
                    if (in_place)
                        allreduce(MPI_IN_PLACE, send.data(), count, type, op, s.comm);
                    else
                        allreduce(send.data(), recv.data(), count, type, op, s.comm);
                });
                const std::vector<int>& got = in_place ? send : recv;
                const int ranks = s.size * (s.size - 1) / 2;
                for (int e = 0; e < count; ++e) {
                    const int* x = &got[std::size_t(e * ints)];
                    if (x[0] != e * s.size + ranks || x[2] != 2 * ranks - e * s.size || x[1] != sentinel ||
                        (ints == 4 && x[3] != sentinel)) {
                        fail(s, "allreduce " + what + ": wrong data or a hole written at element " + std::to_string(e));
                        break;
                    }
                }
            }
    MPI_Op_free(&op);
    free_holey_types(types);
}

// A non-commutative op must give the rank-ordered product: served by order-preserving
// algorithms, declined (and right) with the others.
struct MatmulSetup {
    MPI_Datatype type;
    MPI_Op op;
    MatmulSetup()
    {
        MPI_Type_contiguous(4, MPI_UINT32_T, &type);
        MPI_Type_commit(&type);
        MPI_Op_create(user_matmul, 0, &op);
    }
    ~MatmulSetup()
    {
        MPI_Op_free(&op);
        MPI_Type_free(&type);
    }
};

std::vector<std::uint32_t> matmul_input(int rank, std::size_t count)
{
    std::vector<std::uint32_t> v;
    for (std::size_t e = 0; e < count; ++e) {
        auto m = matrix(rank, e);
        v.insert(v.end(), m.begin(), m.end());
    }
    return v;
}

std::vector<std::uint32_t> matmul_reference(int size, std::size_t first, std::size_t count)
{
    std::vector<std::uint32_t> out;
    for (std::size_t e = first; e < first + count; ++e) {
        std::vector<std::uint32_t> acc = matrix(size - 1, e);
        for (int r = size - 2; r >= 0; --r) {
            int one = 1;
            auto lhs = matrix(r, e);
            user_matmul(lhs.data(), acc.data(), &one, nullptr); // acc = m_r x acc
        }
        out.insert(out.end(), acc.begin(), acc.end());
    }
    return out;
}

Expect matmul_expect(const Setting& s, const char* collective)
{
    return needs_commutative(collective, s.algorithm) ? Expect::declined : Expect::served;
}

// Non-commutative matmul through `call` (allreduce, scan or exscan) at several counts; the result must
// be the rank-ordered product of ranks 0..last.
void matmul_cases(const Setting& s, const char* collective, int last,
                  int (*call)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm))
{
    MatmulSetup mm;
    for (int count : {1, s.size, 100, 1001}) {
        auto send = matmul_input(s.rank, std::size_t(count));
        std::vector<std::uint32_t> recv(send.size());
        const std::string what = "non-commutative matmul count=" + std::to_string(count);
        expect_call(s, collective, matmul_expect(s, collective), what,
                    [&] { call(send.data(), recv.data(), count, mm.type, mm.op, s.comm); });
        if (recv != matmul_reference(last + 1, 0, std::size_t(count)))
            fail(s, std::string(collective) + " " + what + ": not the rank-ordered product of ranks 0.." +
                        std::to_string(last));
    }
}

// Every 8- and 16-bit integer type Open MPI accepts for SUM and PROD, C and Fortran aliases
// included: loom must reduce them all with wrapping arithmetic (Open MPI's own AVX SUM
// saturates them) and keep SUMs from Open MPI. Wrapping sums and products have the same
// bits signed or unsigned, so the reference works on unsigned bytes and words.
struct SmallInt {
    MPI_Datatype type;
    const char* name;
    std::size_t bytes;
};

template <class U>
std::vector<unsigned char> small_int_reference(MPI_Op op, int size, std::size_t count,
                                               const std::function<U(int, std::size_t)>& value)
{
    std::vector<unsigned char> out(count * sizeof(U));
    for (std::size_t i = 0; i < count; ++i) {
        U acc = value(0, i);
        for (int r = 1; r < size; ++r) acc = op == MPI_SUM ? U(acc + value(r, i)) : U(acc * value(r, i));
        std::memcpy(&out[i * sizeof(U)], &acc, sizeof(U));
    }
    return out;
}

void allreduce_small_ints(const Setting& s)
{
    std::vector<SmallInt> types = {{MPI_CHAR, "CHAR", 1},
                                   {MPI_SIGNED_CHAR, "SIGNED_CHAR", 1},
                                   {MPI_UNSIGNED_CHAR, "UNSIGNED_CHAR", 1},
                                   {MPI_INT8_T, "INT8_T", 1},
                                   {MPI_UINT8_T, "UINT8_T", 1},
                                   {MPI_BYTE, "BYTE", 1},
                                   {MPI_SHORT, "SHORT", 2},
                                   {MPI_UNSIGNED_SHORT, "UNSIGNED_SHORT", 2},
                                   {MPI_INT16_T, "INT16_T", 2},
                                   {MPI_UINT16_T, "UINT16_T", 2}};
    // The Fortran types exist where Open MPI was built with Fortran (a site's build may not be:
    // mpi.h then leaves MPI_INTEGER1/2 undefined, or - Open MPI 6 - defines them with no size, and
    // MPI_CHARACTER has no size).
    auto has_size = [](MPI_Datatype t, int bytes) {
        int size = 0;
        MPI_Type_size(t, &size);
        return size == bytes;
    };
    if (has_size(MPI_CHARACTER, 1)) types.push_back({MPI_CHARACTER, "CHARACTER", 1});
#ifdef MPI_INTEGER1
    if (has_size(MPI_INTEGER1, 1)) types.push_back({MPI_INTEGER1, "INTEGER1", 1});
#endif
#ifdef MPI_INTEGER2
    if (has_size(MPI_INTEGER2, 2)) types.push_back({MPI_INTEGER2, "INTEGER2", 2});
#endif
    // Values near the top of the range, so sums overflow at any rank count; products of odd
    // values wrap too.
    auto byte_value = [](int r, std::size_t i) { return std::uint8_t(120 + 61 * r + 7 * i); };
    auto word_value = [](int r, std::size_t i) { return std::uint16_t(32000 + 15013 * r + 977 * i); };
    for (const SmallInt& t : types)
        for (OpCase op : {OpCase{MPI_SUM, "SUM"}, OpCase{MPI_PROD, "PROD"}})
            for (int count : {1, 100, 4099}) {
                const std::size_t n = std::size_t(count);
                std::vector<unsigned char> send(n * t.bytes), recv(n * t.bytes, 0x77), expected;
                for (std::size_t i = 0; i < n; ++i) {
                    if (t.bytes == 1)
                        send[i] = byte_value(s.rank, i);
                    else {
                        const std::uint16_t v = word_value(s.rank, i);
                        std::memcpy(&send[2 * i], &v, 2);
                    }
                }
                expected = t.bytes == 1 ? small_int_reference<std::uint8_t>(op.op, s.size, n, byte_value)
                                        : small_int_reference<std::uint16_t>(op.op, s.size, n, word_value);
                const std::string what = std::string(t.name) + " " + op.name + " count=" + std::to_string(count);
                // SUMs are kept from Open MPI (served whatever the rules or a forced algorithm say).
                expect_call(s, "allreduce", op.op == MPI_SUM ? Expect::kept : Expect::served, what,
                            [&] { allreduce(send.data(), recv.data(), count, t.type, op.op, s.comm); });
                if (recv != expected) fail(s, "allreduce " + what + ": wrong result (not wrapped?)");
            }
}

} // namespace

void check_allreduce(const Setting& s)
{
    allreduce_predefined<int>(s, kIntOps);
    allreduce_predefined<std::int64_t>(s, {{MPI_SUM, "SUM"}, {MPI_PROD, "PROD"}, {MPI_BXOR, "BXOR"}});
    allreduce_predefined<float>(s, kFloatOps);
    allreduce_predefined<double>(s, kFloatOps);
    allreduce_predefined<std::uint8_t>(s, {{MPI_SUM, "SUM (uint8, wraps)"}});
    allreduce_small_ints(s);
    allreduce_loc<int>(s, MPI_2INT, MPI_MINLOC, "MINLOC 2INT");
    allreduce_loc<double>(s, MPI_DOUBLE_INT, MPI_MAXLOC, "MAXLOC DOUBLE_INT");
    allreduce_holey(s);

    MPI_Op sum;
    MPI_Op_create(user_int_sum, 1, &sum);
    for (int count : {1, s.size, 1000}) {
        std::vector<int> send(static_cast<std::size_t>(count)), recv(static_cast<std::size_t>(count)),
            expected(std::size_t(count), 0);
        for (int i = 0; i < count; ++i) {
            send[std::size_t(i)] = i * (s.rank + 1);
            for (int r = 0; r < s.size; ++r) expected[std::size_t(i)] += i * (r + 1);
        }
        const std::string what = "user commutative sum count=" + std::to_string(count);
        expect_call(s, "allreduce", Expect::served, what,
                    [&] { allreduce(send.data(), recv.data(), count, MPI_INT, sum, s.comm); });
        if (recv != expected) fail(s, "allreduce " + what + ": wrong result");
    }
    MPI_Op_free(&sum);
    matmul_cases(s, "allreduce", s.size - 1, allreduce);
}

void check_reduce(const Setting& s)
{
    for (int root : {0, s.size - 1, s.size / 2}) {
        for (OpCase op : {OpCase{MPI_SUM, "SUM"}, OpCase{MPI_MAX, "MAX"}})
            for (int count : counts_for(s.size))
                for (bool in_place : {false, true}) {
                    const bool is_root = s.rank == root;
                    // recv has room for one more: with count 0 both buffers would be NULL, which
                    // MPIX_Reduce_init (4.1) refuses as the same buffer for send and receive.
                    std::vector<double> send(static_cast<std::size_t>(count)), recv(std::size_t(count) + 1, 77.0);
                    for (std::size_t i = 0; i < send.size(); ++i) send[i] = input<double>(op.op, s.rank, i);
                    if (in_place && is_root) std::copy(send.begin(), send.end(), recv.begin());
                    const std::string name =
                        describe("", op, sizeof(double), count, in_place) + " root=" + std::to_string(root);
                    expect_call(s, "reduce", count == 0 ? Expect::untouched : Expect::served, name, [&] {
                        const void* sb = in_place && is_root ? MPI_IN_PLACE : send.data();
                        reduce(sb, is_root ? recv.data() : nullptr, count, MPI_DOUBLE, op.op, root, s.comm);
                    });
                    if (is_root && !same<double>(recv.data(), op.op, s.size, 0, std::size_t(count)))
                        fail(s, "reduce" + name + ": wrong result");
                }
        MatmulSetup mm;
        for (int count : {1, s.size + 1, 333}) {
            auto send = matmul_input(s.rank, std::size_t(count));
            std::vector<std::uint32_t> recv(send.size());
            const std::string what =
                "non-commutative matmul count=" + std::to_string(count) + " root=" + std::to_string(root);
            expect_call(s, "reduce", matmul_expect(s, "reduce"), what,
                        [&] { reduce(send.data(), recv.data(), count, mm.type, mm.op, root, s.comm); });
            if (s.rank == root && recv != matmul_reference(s.size, 0, std::size_t(count)))
                fail(s, "reduce " + what + ": not the rank-ordered product");
        }
    }
}

// reduce_scatter_block and reduce_scatter share the checks: rank i gets counts[i] elements.
namespace {
void reduce_scatter_case(const Setting& s, const char* collective, const std::vector<int>& counts, bool in_place,
                         MPI_Op op, const std::string& label)
{
    std::size_t total = 0, first = 0;
    for (int i = 0; i < s.size; ++i) {
        if (i == s.rank) first = total;
        total += std::size_t(counts[std::size_t(i)]);
    }
    const bool block = std::strcmp(collective, "reduce_scatter_block") == 0;
    std::vector<int> send(total), recv(in_place ? total : std::size_t(counts[std::size_t(s.rank)]) + 1, -7);
    for (std::size_t i = 0; i < total; ++i) send[i] = input<int>(op, s.rank, i);
    if (in_place) recv = send;
    bool all_zero = true;
    for (int c : counts) all_zero = all_zero && c == 0;
    const std::string name = label + (in_place ? " in-place" : "");
    expect_call(s, collective, all_zero ? Expect::untouched : Expect::served, name, [&] {
        const void* sb = in_place ? MPI_IN_PLACE : send.data();
        if (block)
            reduce_scatter_block(sb, recv.data(), counts[0], MPI_INT, op, s.comm);
        else
            reduce_scatter(sb, recv.data(), counts.data(), MPI_INT, op, s.comm);
    });
    if (!same<int>(recv.data(), op, s.size, first, std::size_t(counts[std::size_t(s.rank)])))
        fail(s, std::string(collective) + " " + name + ": wrong block");
    if (!in_place && recv.back() != -7) fail(s, std::string(collective) + " " + name + ": wrote past its block");
}
} // namespace

void check_reduce_scatter_block(const Setting& s)
{
    for (int count : {0, 1, 3, 1000, 16411})
        for (bool in_place : {false, true})
            for (MPI_Op op : {MPI_SUM, MPI_BXOR})
                reduce_scatter_case(s, "reduce_scatter_block", std::vector<int>(std::size_t(s.size), count), in_place,
                                    op, "count=" + std::to_string(count) + (op == MPI_SUM ? " SUM" : " BXOR"));
    MatmulSetup mm;
    std::vector<std::uint32_t> send = matmul_input(s.rank, std::size_t(s.size) * 3), recv(12);
    expect_call(s, "reduce_scatter_block", matmul_expect(s, "reduce_scatter_block"), "non-commutative matmul",
                [&] { reduce_scatter_block(send.data(), recv.data(), 3, mm.type, mm.op, s.comm); });
    if (recv != matmul_reference(s.size, std::size_t(s.rank) * 3, 3))
        fail(s, "reduce_scatter_block matmul: wrong block");
}

void check_reduce_scatter(const Setting& s)
{
    // Irregular blocks, some empty, one large.
    std::vector<int> irregular(std::size_t(s.size));
    for (int i = 0; i < s.size; ++i)
        irregular[std::size_t(i)] = (i % 3 == 1) ? 0 : (i * 7 + 1) % 23 + (i == 0 ? 5000 : 0);
    std::vector<int> one_nonempty(std::size_t(s.size), 0);
    one_nonempty[std::size_t(s.size - 1)] = 101;
    for (bool in_place : {false, true}) {
        reduce_scatter_case(s, "reduce_scatter", irregular, in_place, MPI_SUM, "irregular");
        reduce_scatter_case(s, "reduce_scatter", one_nonempty, in_place, MPI_SUM, "one non-empty block");
        reduce_scatter_case(s, "reduce_scatter", std::vector<int>(std::size_t(s.size), 17), in_place, MPI_MAX,
                            "uniform 17");
    }
    // Non-commutative, irregular blocks: declined by every reduce_scatter algorithm, and the
    // fallback must still give each rank its block of the rank-ordered product.
    MatmulSetup mm;
    std::vector<int> counts(std::size_t(s.size));
    std::size_t total = 0, first = 0;
    for (int i = 0; i < s.size; ++i) {
        counts[std::size_t(i)] = i % 3 + 1;
        if (i == s.rank) first = total;
        total += std::size_t(counts[std::size_t(i)]);
    }
    std::vector<std::uint32_t> send = matmul_input(s.rank, total), recv(4 * std::size_t(counts[std::size_t(s.rank)]));
    expect_call(s, "reduce_scatter", matmul_expect(s, "reduce_scatter"), "non-commutative matmul, irregular",
                [&] { reduce_scatter(send.data(), recv.data(), counts.data(), mm.type, mm.op, s.comm); });
    if (recv != matmul_reference(s.size, first, std::size_t(counts[std::size_t(s.rank)])))
        fail(s, "reduce_scatter matmul: wrong block");
}

// ---- scan and exscan: rank r gets the reduction over ranks 0..r (scan) or 0..r-1 (exscan), in
// rank order; exscan's rank 0 gets nothing (MPI leaves its recvbuf undefined: not checked) ----

namespace {
using ScanCall = int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);

// Ranks whose inputs rank `rank`'s result reduces: 0 means none (exscan's rank 0).
int prefix_ranks(const Setting& s, bool exclusive) { return exclusive ? s.rank : s.rank + 1; }

void scan_int_ops(const Setting& s, const char* collective, ScanCall call, bool exclusive)
{
    for (const OpCase& op : kIntOps) {
        const int count = 37;
        std::vector<int> send(static_cast<std::size_t>(count)), recv(static_cast<std::size_t>(count));
        for (std::size_t i = 0; i < send.size(); ++i) send[i] = input<int>(op.op, s.rank, i);
        const std::string name = describe("", op, sizeof(int), count, false);
        expect_call(s, collective, Expect::served, name,
                    [&] { call(send.data(), recv.data(), count, MPI_INT, op.op, s.comm); });
        const int n = prefix_ranks(s, exclusive);
        if (n > 0 && !same<int>(recv.data(), op.op, n, 0, std::size_t(count)))
            fail(s, collective + name + ": wrong result");
    }
}

void check_prefix(const Setting& s, const char* collective, ScanCall call, bool exclusive)
{
    const int n = prefix_ranks(s, exclusive);
    for (OpCase op : {OpCase{MPI_SUM, "SUM"}, OpCase{MPI_MAX, "MAX"}, OpCase{MPI_PROD, "PROD"}})
        for (int count : counts_for(s.size))
            for (bool in_place : {false, true}) {
                std::vector<double> send(static_cast<std::size_t>(count)), recv(std::size_t(count) + 1, 77.0);
                for (std::size_t i = 0; i < send.size(); ++i) send[i] = input<double>(op.op, s.rank, i);
                if (in_place) std::copy(send.begin(), send.end(), recv.begin());
                const std::string name = describe("", op, sizeof(double), count, in_place);
                expect_call(s, collective, count == 0 ? Expect::untouched : Expect::served, name, [&] {
                    call(in_place ? MPI_IN_PLACE : send.data(), recv.data(), count, MPI_DOUBLE, op.op, s.comm);
                });
                if ((n > 0 && !same<double>(recv.data(), op.op, n, 0, std::size_t(count))) ||
                    recv[std::size_t(count)] != 77.0)
                    fail(s, collective + name + ": wrong result, or written past it");
            }
    scan_int_ops(s, collective, call, exclusive);
    if (n > 0)
        matmul_cases(s, collective, n - 1, call);
    else { // rank 0 of exscan takes part in the same calls; its result is not checked
        MatmulSetup mm;
        for (int count : {1, s.size, 100, 1001}) {
            auto send = matmul_input(s.rank, std::size_t(count));
            std::vector<std::uint32_t> recv(send.size());
            expect_call(s, collective, matmul_expect(s, collective), "non-commutative matmul",
                        [&] { call(send.data(), recv.data(), count, mm.type, mm.op, s.comm); });
        }
    }
}
} // namespace

void check_scan(const Setting& s) { check_prefix(s, "scan", scan, false); }
void check_exscan(const Setting& s) { check_prefix(s, "exscan", exscan, true); }

} // namespace check
