// loom's own reduction kernels: every valid (op, type) pair exists, invalid ones do not, and
// the arithmetic follows MPI (wrap-around integers, MINLOC/MAXLOC tie-breaking).
#include "reduce_kernels.hpp"

#include "loom_catch.hpp"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

using namespace loom;

namespace {
// fn(in, inout); and checks that the one-pass fn3(in, inout, out) writes the same bytes.
template <class T>
std::vector<T> apply(loom_op_t op, loom_type_t type, std::vector<T> in, std::vector<T> inout)
{
    auto k = find_kernel(op, type);
    REQUIRE(k);
    REQUIRE(k->elem_size == sizeof(T));
    REQUIRE(k->fn3 != nullptr);
    std::vector<T> out(in.size());
    std::memset(static_cast<void*>(out.data()), 0x5a, out.size() * sizeof(T));
    k->fn3(in.data(), inout.data(), out.data(), in.size(), k->ctx);
    k->fn(in.data(), inout.data(), in.size(), k->ctx);
    CHECK(std::memcmp(out.data(), inout.data(), out.size() * sizeof(T)) == 0);
    return inout;
}
struct DoubleInt {
    double value;
    int index;
};
} // namespace

TEST_CASE("unsigned 8-bit sums wrap around as MPI requires", "[kernels]")
{
    // Open MPI 4.1.4's AVX component saturates this to 255.
    auto r = apply<std::uint8_t>(LOOM_OP_SUM, LOOM_TYPE_UINT8, {250, 1, 255}, {10, 2, 1});
    CHECK(r == std::vector<std::uint8_t>{4, 3, 0});
}

TEST_CASE("signed integer sums and products wrap without undefined behaviour", "[kernels]")
{
    auto s = apply<std::int32_t>(LOOM_OP_SUM, LOOM_TYPE_INT32, {INT32_MAX, -5}, {1, 3});
    CHECK(s == std::vector<std::int32_t>{INT32_MIN, -2});
    auto p = apply<std::int8_t>(LOOM_OP_PROD, LOOM_TYPE_INT8, {64, -3}, {4, 7});
    CHECK(p == std::vector<std::int8_t>{0, -21});
}

TEST_CASE("min, max, logical and bitwise ops on integers", "[kernels]")
{
    CHECK(apply<int>(LOOM_OP_MIN, LOOM_TYPE_INT32, {3, -1}, {2, 5}) == std::vector<int>{2, -1});
    CHECK(apply<int>(LOOM_OP_MAX, LOOM_TYPE_INT32, {3, -1}, {2, 5}) == std::vector<int>{3, 5});
    CHECK(apply<int>(LOOM_OP_LAND, LOOM_TYPE_INT32, {3, 0, 7}, {2, 5, 0}) == std::vector<int>{1, 0, 0});
    CHECK(apply<int>(LOOM_OP_LOR, LOOM_TYPE_INT32, {3, 0, 0}, {0, 5, 0}) == std::vector<int>{1, 1, 0});
    CHECK(apply<int>(LOOM_OP_LXOR, LOOM_TYPE_INT32, {3, 0, 4}, {9, 5, 0}) == std::vector<int>{0, 1, 1});
    CHECK(apply<int>(LOOM_OP_BAND, LOOM_TYPE_INT32, {6}, {3}) == std::vector<int>{2});
    CHECK(apply<int>(LOOM_OP_BOR, LOOM_TYPE_INT32, {6}, {3}) == std::vector<int>{7});
    CHECK(apply<int>(LOOM_OP_BXOR, LOOM_TYPE_INT32, {6}, {3}) == std::vector<int>{5});
}

TEST_CASE("floating-point ops", "[kernels]")
{
    CHECK(apply<double>(LOOM_OP_SUM, LOOM_TYPE_DOUBLE, {1.5, -2}, {2.25, 2}) == std::vector<double>{3.75, 0});
    CHECK(apply<float>(LOOM_OP_PROD, LOOM_TYPE_FLOAT, {1.5f}, {-4}) == std::vector<float>{-6});
    CHECK(apply<double>(LOOM_OP_MAX, LOOM_TYPE_DOUBLE, {1, -3}, {2, -4}) == std::vector<double>{2, -3});
}

TEST_CASE("MINLOC and MAXLOC pick the extreme value and, on a tie, the smaller index", "[kernels]")
{
    auto k = find_kernel(LOOM_OP_MINLOC, LOOM_TYPE_DOUBLE_INT);
    REQUIRE(k);
    REQUIRE(k->elem_size == sizeof(DoubleInt));
    std::vector<DoubleInt> in{{1.0, 7}, {2.0, 3}, {5.0, 9}};
    std::vector<DoubleInt> io{{2.0, 1}, {2.0, 5}, {4.0, 2}};
    k->fn(in.data(), io.data(), in.size(), k->ctx);
    CHECK((io[0].value == 1.0 && io[0].index == 7));
    CHECK((io[1].value == 2.0 && io[1].index == 3));
    CHECK((io[2].value == 4.0 && io[2].index == 2));

    auto m = find_kernel(LOOM_OP_MAXLOC, LOOM_TYPE_DOUBLE_INT);
    REQUIRE(m);
    std::vector<DoubleInt> io2{{2.0, 1}, {2.0, 5}, {4.0, 2}};
    m->fn(in.data(), io2.data(), in.size(), m->ctx);
    CHECK((io2[0].value == 2.0 && io2[0].index == 1));
    CHECK((io2[1].value == 2.0 && io2[1].index == 3));
    CHECK((io2[2].value == 5.0 && io2[2].index == 9));

    // The one-pass form (fn3) picks the same pairs (compared field by field: padding).
    std::vector<DoubleInt> io3{{2.0, 1}, {2.0, 5}, {4.0, 2}}, out(3, DoubleInt{-1.0, -1});
    m->fn3(in.data(), io3.data(), out.data(), in.size(), m->ctx);
    for (std::size_t i = 0; i < out.size(); ++i) CHECK((out[i].value == io2[i].value && out[i].index == io2[i].index));
}

TEST_CASE("the one-pass kernels write what a copy and the two-operand kernel write", "[kernels]")
{
    // Every op on every type without padding bytes, bit patterns of all kinds (NaNs too).
    const loom_type_t types[] = {LOOM_TYPE_INT8,  LOOM_TYPE_UINT8,  LOOM_TYPE_INT16, LOOM_TYPE_UINT16,
                                 LOOM_TYPE_INT32, LOOM_TYPE_UINT32, LOOM_TYPE_INT64, LOOM_TYPE_UINT64,
                                 LOOM_TYPE_FLOAT, LOOM_TYPE_DOUBLE, LOOM_TYPE_FLOAT_COMPLEX, LOOM_TYPE_DOUBLE_COMPLEX};
    for (loom_type_t t : types) {
        for (int o = LOOM_OP_SUM; o < LOOM_OP_COUNT; ++o) {
            auto k = find_kernel(loom_op_t(o), t);
            if (!k) continue;
            REQUIRE(k->fn3 != nullptr);
            const std::size_t n = 37, bytes = n * k->elem_size;
            std::vector<unsigned char> in(bytes), inout(bytes), out(bytes, 0x5a);
            for (std::size_t i = 0; i < bytes; ++i) {
                in[i] = static_cast<unsigned char>(i * 131 + 7);
                inout[i] = static_cast<unsigned char>(i * 71 + 3);
            }
            k->fn3(in.data(), inout.data(), out.data(), n, k->ctx);
            k->fn(in.data(), inout.data(), n, k->ctx);
            INFO("op " << o << ", type " << int(t));
            CHECK(out == inout);
        }
    }
}

TEST_CASE("combinations MPI does not define have no kernel", "[kernels]")
{
    CHECK_FALSE(find_kernel(LOOM_OP_BAND, LOOM_TYPE_FLOAT));
    CHECK_FALSE(find_kernel(LOOM_OP_LOR, LOOM_TYPE_DOUBLE));
    CHECK_FALSE(find_kernel(LOOM_OP_SUM, LOOM_TYPE_2INT));
    CHECK_FALSE(find_kernel(LOOM_OP_MINLOC, LOOM_TYPE_INT32));
    CHECK_FALSE(find_kernel(LOOM_OP_MIN, LOOM_TYPE_DOUBLE_COMPLEX));
    CHECK_FALSE(find_kernel(LOOM_OP_SUM, LOOM_TYPE_BOOL));
}

TEST_CASE("every valid pair of the MPI categories has a kernel", "[kernels]")
{
    const loom_type_t ints[] = {LOOM_TYPE_INT8,  LOOM_TYPE_UINT8,  LOOM_TYPE_INT16, LOOM_TYPE_UINT16,
                                LOOM_TYPE_INT32, LOOM_TYPE_UINT32, LOOM_TYPE_INT64, LOOM_TYPE_UINT64};
    for (loom_type_t t : ints)
        for (int op = LOOM_OP_SUM; op <= LOOM_OP_BXOR; ++op) CHECK(find_kernel(loom_op_t(op), t));
    for (loom_type_t t : {LOOM_TYPE_FLOAT, LOOM_TYPE_DOUBLE, LOOM_TYPE_LONG_DOUBLE})
        for (loom_op_t op : {LOOM_OP_SUM, LOOM_OP_PROD, LOOM_OP_MIN, LOOM_OP_MAX}) CHECK(find_kernel(op, t));
    for (loom_op_t op : {LOOM_OP_LAND, LOOM_OP_LOR, LOOM_OP_LXOR}) CHECK(find_kernel(op, LOOM_TYPE_BOOL));
    for (loom_type_t t : {LOOM_TYPE_FLOAT_INT, LOOM_TYPE_DOUBLE_INT, LOOM_TYPE_LONG_INT, LOOM_TYPE_2INT,
                          LOOM_TYPE_SHORT_INT, LOOM_TYPE_LONG_DOUBLE_INT})
        for (loom_op_t op : {LOOM_OP_MINLOC, LOOM_OP_MAXLOC}) CHECK(find_kernel(op, t));
}

TEST_CASE("vectorized floating-point kernels give, at every length, what one element at a time gives",
          "[kernels][vectorized]")
{
    // The kernels are built with the vectorizer on (algorithms/meson.build): a vector body and
    // a scalar tail must agree with the element-wise definition, NaN, infinities and signed
    // zeros included (MIN: b < a ? b : a; MAX: a < b ? b : a; a from `in`).
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    const double special[] = {1.5, -0.0, 0.0, nan, inf, -inf, -2.25, 3e300, -1e-310, 7.0, nan, -0.0};
    auto bits = [](double d) {
        std::uint64_t u;
        std::memcpy(&u, &d, sizeof u);
        return u;
    };
    for (loom_op_t op : {LOOM_OP_SUM, LOOM_OP_PROD, LOOM_OP_MIN, LOOM_OP_MAX}) {
        for (std::size_t n = 1; n <= 67; ++n) {
            std::vector<double> in(n), inout(n), want(n);
            for (std::size_t i = 0; i < n; ++i) {
                in[i] = special[(i * 5) % std::size(special)];
                inout[i] = special[(i * 7 + 3) % std::size(special)];
                const double a = in[i], b = inout[i];
                want[i] = op == LOOM_OP_SUM    ? a + b
                          : op == LOOM_OP_PROD ? a * b
                          : op == LOOM_OP_MIN  ? (b < a ? b : a)
                                               : (a < b ? b : a);
            }
            const auto got = apply<double>(op, LOOM_TYPE_DOUBLE, in, inout);
            for (std::size_t i = 0; i < n; ++i) {
                INFO("op " << int(op) << ", n " << n << ", element " << i << ": " << in[i] << " with " << inout[i]);
                CHECK(bits(got[i]) == bits(want[i]));
            }
        }
    }
}
