#include "reduce_kernels.hpp"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <type_traits>

namespace loom {

namespace {

// Value/index pairs with the C layout MPI uses for MPI_FLOAT_INT and friends.
template <class V>
struct ValueIndex {
    V value;
    int index;
};

template <class T>
constexpr bool is_plain_int = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <class T>
struct IsComplex : std::false_type {};
template <class T>
struct IsComplex<std::complex<T>> : std::true_type {};

template <class T>
struct IsPair : std::false_type {};
template <class V>
struct IsPair<ValueIndex<V>> : std::true_type {};

// Which (op, type) pairs MPI defines: the "categories" of MPI-4.0 section 6.9.2.
template <class T>
constexpr bool valid(loom_op_t op)
{
    if constexpr (IsPair<T>::value) return op == LOOM_OP_MINLOC || op == LOOM_OP_MAXLOC;
    if constexpr (std::is_same_v<T, bool>) return op == LOOM_OP_LAND || op == LOOM_OP_LOR || op == LOOM_OP_LXOR;
    if constexpr (IsComplex<T>::value) return op == LOOM_OP_SUM || op == LOOM_OP_PROD;
    if constexpr (std::is_floating_point_v<T>)
        return op == LOOM_OP_SUM || op == LOOM_OP_PROD || op == LOOM_OP_MIN || op == LOOM_OP_MAX;
    if constexpr (is_plain_int<T>) return op != LOOM_OP_MINLOC && op != LOOM_OP_MAXLOC;
    return false;
}

// One element of `a op b`, where a comes from `in` (the lower-ranked side) and b from inout.
template <loom_op_t Op, class T>
inline T combine(T a, T b)
{
    if constexpr (Op == LOOM_OP_SUM || Op == LOOM_OP_PROD) {
        if constexpr (is_plain_int<T>) {
            using U = std::make_unsigned_t<T>;
            return Op == LOOM_OP_SUM ? T(U(a) + U(b)) : T(U(a) * U(b));
        } else {
            return Op == LOOM_OP_SUM ? T(a + b) : T(a * b);
        }
    } else if constexpr (Op == LOOM_OP_MIN) {
        return b < a ? b : a;
    } else if constexpr (Op == LOOM_OP_MAX) {
        return a < b ? b : a;
    } else if constexpr (Op == LOOM_OP_LAND) {
        return T((a != T{}) && (b != T{}));
    } else if constexpr (Op == LOOM_OP_LOR) {
        return T((a != T{}) || (b != T{}));
    } else if constexpr (Op == LOOM_OP_LXOR) {
        return T((a != T{}) != (b != T{}));
    } else if constexpr (Op == LOOM_OP_BAND) {
        return T(a & b);
    } else if constexpr (Op == LOOM_OP_BOR) {
        return T(a | b);
    } else if constexpr (Op == LOOM_OP_BXOR) {
        return T(a ^ b);
    } else if constexpr (Op == LOOM_OP_MINLOC || Op == LOOM_OP_MAXLOC) {
        // MPI: the extreme value; on a tie, the smaller index.
        const bool a_wins = Op == LOOM_OP_MINLOC ? a.value < b.value : b.value < a.value;
        if (a_wins) return a;
        if (a.value == b.value) return a.index < b.index ? a : b;
        return b;
    }
}

template <loom_op_t Op, class T>
void kernel(const void* in, void* inout, std::size_t count, void*)
{
    const T* __restrict a = static_cast<const T*>(in);
    T* __restrict b = static_cast<T*>(inout);
    for (std::size_t i = 0; i < count; ++i) b[i] = combine<Op, T>(a[i], b[i]);
}

// out = in op in2 in one pass (Reduction::fn3), where a copy of in2 and kernel() would take two.
template <loom_op_t Op, class T>
void kernel3(const void* in, const void* in2, void* out, std::size_t count, void*)
{
    const T* __restrict a = static_cast<const T*>(in);
    const T* __restrict b = static_cast<const T*>(in2);
    T* __restrict o = static_cast<T*>(out);
    for (std::size_t i = 0; i < count; ++i) o[i] = combine<Op, T>(a[i], b[i]);
}

template <class T, loom_op_t Op>
std::optional<Reduction> make()
{
    if constexpr (valid<T>(Op)) {
        return Reduction{sizeof(T), true, &kernel<Op, T>, nullptr, &kernel3<Op, T>};
    }
    return std::nullopt;
}

template <class T>
std::optional<Reduction> for_type(loom_op_t op)
{
    switch (op) {
    case LOOM_OP_SUM: return make<T, LOOM_OP_SUM>();
    case LOOM_OP_PROD: return make<T, LOOM_OP_PROD>();
    case LOOM_OP_MIN: return make<T, LOOM_OP_MIN>();
    case LOOM_OP_MAX: return make<T, LOOM_OP_MAX>();
    case LOOM_OP_LAND: return make<T, LOOM_OP_LAND>();
    case LOOM_OP_LOR: return make<T, LOOM_OP_LOR>();
    case LOOM_OP_LXOR: return make<T, LOOM_OP_LXOR>();
    case LOOM_OP_BAND: return make<T, LOOM_OP_BAND>();
    case LOOM_OP_BOR: return make<T, LOOM_OP_BOR>();
    case LOOM_OP_BXOR: return make<T, LOOM_OP_BXOR>();
    case LOOM_OP_MINLOC: return make<T, LOOM_OP_MINLOC>();
    case LOOM_OP_MAXLOC: return make<T, LOOM_OP_MAXLOC>();
    case LOOM_OP_COUNT: break;
    }
    return std::nullopt;
}

} // namespace

std::optional<Reduction> find_kernel(loom_op_t op, loom_type_t type)
{
    switch (type) {
    case LOOM_TYPE_INT8: return for_type<std::int8_t>(op);
    case LOOM_TYPE_UINT8: return for_type<std::uint8_t>(op);
    case LOOM_TYPE_INT16: return for_type<std::int16_t>(op);
    case LOOM_TYPE_UINT16: return for_type<std::uint16_t>(op);
    case LOOM_TYPE_INT32: return for_type<std::int32_t>(op);
    case LOOM_TYPE_UINT32: return for_type<std::uint32_t>(op);
    case LOOM_TYPE_INT64: return for_type<std::int64_t>(op);
    case LOOM_TYPE_UINT64: return for_type<std::uint64_t>(op);
    case LOOM_TYPE_FLOAT: return for_type<float>(op);
    case LOOM_TYPE_DOUBLE: return for_type<double>(op);
    case LOOM_TYPE_LONG_DOUBLE: return for_type<long double>(op);
    case LOOM_TYPE_BOOL: return for_type<bool>(op);
    case LOOM_TYPE_FLOAT_COMPLEX: return for_type<std::complex<float>>(op);
    case LOOM_TYPE_DOUBLE_COMPLEX: return for_type<std::complex<double>>(op);
    case LOOM_TYPE_FLOAT_INT: return for_type<ValueIndex<float>>(op);
    case LOOM_TYPE_DOUBLE_INT: return for_type<ValueIndex<double>>(op);
    case LOOM_TYPE_LONG_INT: return for_type<ValueIndex<long>>(op);
    case LOOM_TYPE_2INT: return for_type<ValueIndex<int>>(op);
    case LOOM_TYPE_SHORT_INT: return for_type<ValueIndex<short>>(op);
    case LOOM_TYPE_LONG_DOUBLE_INT: return for_type<ValueIndex<long double>>(op);
    case LOOM_TYPE_COUNT: break;
    }
    return std::nullopt;
}

} // namespace loom
