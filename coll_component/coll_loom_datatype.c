/*
 * Datatype and op services for the core: how a (count, datatype, op) triple becomes a
 * type-erased loom_reduction_t over dense elements.
 *
 *   predefined datatype, predefined op  -> loom's own kernel (algorithms/reduce_kernels.cpp)
 *                                          or, for pairs loom has no kernel for (Fortran
 *                                          LOGICAL, ...), Open MPI's op machinery
 *   derived datatype, predefined op     -> declined: Open MPI's MPI layer rejects this pairing
 *   any datatype, user-defined op       -> the user's function through ompi_op_reduce,
 *                                          one element = one datatype instance (its extent)
 *
 * Elements must not overlap: a datatype whose true extent reaches past its extent (or
 * starts before 0) cannot be split into element ranges, and is declined.
 */
#include "coll_loom.h"

#include <stdint.h>
#include <stdlib.h>

#include "ompi/runtime/mpiruntime.h"
#include "opal/datatype/opal_convertor.h"

/* loom's element type for the class Open MPI itself reduces a predefined datatype as
 * (ompi_op_ddt_map[dtype->id], an OMPI_OP_BASE_TYPE_*), or -1 where loom has no kernel.
 * Going through Open MPI's own table covers every alias Open MPI maps to a class by size:
 * MPI_CHAR, MPI_SIGNED_CHAR, MPI_SHORT, MPI_INTEGER1/2, MPI_CHARACTER, MPI_LOGICAL1, MPI_BYTE
 * and the rest, so loom serves exactly the (type, op) pairs Open MPI accepts. */
#define SIGNED_OF(bytes)              \
    ((bytes) == 1   ? LOOM_TYPE_INT8  \
     : (bytes) == 2 ? LOOM_TYPE_INT16 \
     : (bytes) == 4 ? LOOM_TYPE_INT32 \
     : (bytes) == 8 ? LOOM_TYPE_INT64 \
                    : -1)
#define UNSIGNED_OF(bytes)             \
    ((bytes) == 1   ? LOOM_TYPE_UINT8  \
     : (bytes) == 2 ? LOOM_TYPE_UINT16 \
     : (bytes) == 4 ? LOOM_TYPE_UINT32 \
     : (bytes) == 8 ? LOOM_TYPE_UINT64 \
                    : -1)
static int loom_type_of(int op_type)
{
    switch (op_type) {
    case OMPI_OP_BASE_TYPE_INT8_T: return LOOM_TYPE_INT8;
    case OMPI_OP_BASE_TYPE_UINT8_T: return LOOM_TYPE_UINT8;
    case OMPI_OP_BASE_TYPE_INT16_T: return LOOM_TYPE_INT16;
    case OMPI_OP_BASE_TYPE_UINT16_T: return LOOM_TYPE_UINT16;
    case OMPI_OP_BASE_TYPE_INT32_T: return LOOM_TYPE_INT32;
    case OMPI_OP_BASE_TYPE_UINT32_T: return LOOM_TYPE_UINT32;
    case OMPI_OP_BASE_TYPE_INT64_T: return LOOM_TYPE_INT64;
    case OMPI_OP_BASE_TYPE_UINT64_T: return LOOM_TYPE_UINT64;
    case OMPI_OP_BASE_TYPE_LONG: return SIGNED_OF(sizeof(long));
    case OMPI_OP_BASE_TYPE_UNSIGNED_LONG: return UNSIGNED_OF(sizeof(unsigned long));
    case OMPI_OP_BASE_TYPE_INTEGER: return SIGNED_OF(OMPI_SIZEOF_FORTRAN_INTEGER);
    case OMPI_OP_BASE_TYPE_INTEGER1: return LOOM_TYPE_INT8;
    case OMPI_OP_BASE_TYPE_INTEGER2: return LOOM_TYPE_INT16;
    case OMPI_OP_BASE_TYPE_INTEGER4: return LOOM_TYPE_INT32;
    case OMPI_OP_BASE_TYPE_INTEGER8: return LOOM_TYPE_INT64;
    case OMPI_OP_BASE_TYPE_FLOAT: return LOOM_TYPE_FLOAT;
    case OMPI_OP_BASE_TYPE_DOUBLE: return LOOM_TYPE_DOUBLE;
    case OMPI_OP_BASE_TYPE_LONG_DOUBLE: return LOOM_TYPE_LONG_DOUBLE;
    case OMPI_OP_BASE_TYPE_REAL4: return LOOM_TYPE_FLOAT;
    case OMPI_OP_BASE_TYPE_REAL8: return LOOM_TYPE_DOUBLE;
    case OMPI_OP_BASE_TYPE_REAL: return 4 == OMPI_SIZEOF_FORTRAN_REAL ? LOOM_TYPE_FLOAT : -1;
    case OMPI_OP_BASE_TYPE_DOUBLE_PRECISION: return 8 == OMPI_SIZEOF_FORTRAN_DOUBLE_PRECISION ? LOOM_TYPE_DOUBLE : -1;
    case OMPI_OP_BASE_TYPE_BOOL: return LOOM_TYPE_BOOL;
    case OMPI_OP_BASE_TYPE_C_FLOAT_COMPLEX: return LOOM_TYPE_FLOAT_COMPLEX;
    case OMPI_OP_BASE_TYPE_C_DOUBLE_COMPLEX: return LOOM_TYPE_DOUBLE_COMPLEX;
    case OMPI_OP_BASE_TYPE_FLOAT_INT: return LOOM_TYPE_FLOAT_INT;
    case OMPI_OP_BASE_TYPE_DOUBLE_INT: return LOOM_TYPE_DOUBLE_INT;
    case OMPI_OP_BASE_TYPE_LONG_INT: return LOOM_TYPE_LONG_INT;
    case OMPI_OP_BASE_TYPE_2INT: return LOOM_TYPE_2INT;
    case OMPI_OP_BASE_TYPE_SHORT_INT: return LOOM_TYPE_SHORT_INT;
    case OMPI_OP_BASE_TYPE_LONG_DOUBLE_INT: return LOOM_TYPE_LONG_DOUBLE_INT;
    default: return -1; /* Fortran LOGICAL, WCHAR, REAL2/16, long double complex, ... */
    }
}
#undef SIGNED_OF
#undef UNSIGNED_OF

static const struct {
    struct ompi_op_t *op;
    loom_op_t loom_op;
} predefined_ops[] = {
    {MPI_SUM, LOOM_OP_SUM},   {MPI_PROD, LOOM_OP_PROD}, {MPI_MIN, LOOM_OP_MIN},       {MPI_MAX, LOOM_OP_MAX},
    {MPI_LAND, LOOM_OP_LAND}, {MPI_LOR, LOOM_OP_LOR},   {MPI_LXOR, LOOM_OP_LXOR},     {MPI_BAND, LOOM_OP_BAND},
    {MPI_BOR, LOOM_OP_BOR},   {MPI_BXOR, LOOM_OP_BXOR}, {MPI_MINLOC, LOOM_OP_MINLOC}, {MPI_MAXLOC, LOOM_OP_MAXLOC},
};

#define LENGTH(a) (sizeof(a) / sizeof((a)[0]))

/* Open MPI's AVX op component (4.1.4 here) saturates SUMs of 8- and 16-bit integers
 * (250 + 10 gives 255 in MPI_UINT8_T, 127 + 1 gives 127 in MPI_INT8_T; checked here with
 * MPI_Reduce_local), where MPI requires them to wrap as loom's kernels do. Such a reduction
 * must never be handed to Open MPI by a rule. (Its 8- and 16-bit PROD wraps correctly.) */
static int saturating_in_ompi(loom_op_t op, int type)
{
    return op == LOOM_OP_SUM &&
           (type == LOOM_TYPE_INT8 || type == LOOM_TYPE_UINT8 || type == LOOM_TYPE_INT16 || type == LOOM_TYPE_UINT16);
}

/* loom's kernel for the predefined datatype and op, if it has one; *ompi_wrong says whether
 * Open MPI's own kernel gets that reduction wrong. */
static int own_kernel(struct ompi_datatype_t *dtype, struct ompi_op_t *op, loom_reduction_t *out, int *ompi_wrong)
{
    if (dtype->id < 0 || dtype->id >= OMPI_DATATYPE_MAX_PREDEFINED) return 0;
    const int type = loom_type_of(ompi_op_ddt_map[dtype->id]);
    if (type < 0) return 0;
    for (size_t o = 0; o < LENGTH(predefined_ops); ++o) {
        if (predefined_ops[o].op == op) {
            *ompi_wrong = saturating_in_ompi(predefined_ops[o].loom_op, type);
            return loom_find_kernel(predefined_ops[o].loom_op, (loom_type_t)type, out);
        }
    }
    return 0;
}

int loom_copy_elements(void *dst, const void *src, size_t n, struct ompi_datatype_t *dtype)
{
    /* ompi_datatype_copy_content_same_ddt takes an int32 count. */
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    while (n > 0) {
        const int chunk = n > INT32_MAX ? INT32_MAX : (int)n;
        int rc = ompi_datatype_copy_content_same_ddt(dtype, chunk, dst, (char *)src);
        if (OMPI_SUCCESS != rc) return rc;
        dst = (char *)dst + (size_t)chunk * (size_t)extent;
        src = (const char *)src + (size_t)chunk * (size_t)extent;
        n -= (size_t)chunk;
    }
    return OMPI_SUCCESS;
}

/* The core's view of a reduction through Open MPI: inout = in op inout over `count`
 * instances of the plan's datatype. */
static void ompi_reduce_adapter(const void *in, void *inout, size_t count, void *ctx)
{
    const loom_reduce_plan_t *plan = ctx;
    ompi_op_reduce(plan->op, (void *)in, inout, count, plan->dtype);
}

int loom_dense_instances(struct ompi_datatype_t *dtype)
{
    ptrdiff_t true_lb, true_extent, lb, extent;
    size_t size;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_type_size(dtype, &size);
    return ompi_datatype_is_contiguous_memory_layout(dtype, 2) && 0 == true_lb && (size_t)extent == size;
}

/* The last (datatype, op) planned with loom's own kernel: applications call one reduction
 * over and over, and finding the kernel (a scan of the predefined types and ops) was ~7% of
 * an 8-byte allreduce. Not used under MPI_THREAD_MULTIPLE (calls may run concurrently). */
static struct {
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    loom_reduce_plan_t plan;
} last_plan;

int loom_plan_reduction(struct ompi_datatype_t *dtype, struct ompi_op_t *op, loom_reduce_plan_t *plan, const char **why)
{
    if (!ompi_mpi_thread_multiple && last_plan.dtype == dtype && last_plan.op == op && NULL != dtype) {
        *plan = last_plan.plan;
        return 1;
    }
    ptrdiff_t lb, extent, true_lb, true_extent;
    size_t size;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    ompi_datatype_type_size(dtype, &size);

    plan->op = op;
    plan->dtype = dtype;
    plan->holes = 0;
    plan->ompi_kernel_wrong = 0;
    if (size == 0 || extent <= 0) {
        *why = "the datatype is empty";
        return 0;
    }
    if (true_lb < 0 || true_lb + true_extent > extent) {
        *why = "the datatype's instances overlap or start before the buffer";
        return 0;
    }

    if (ompi_op_is_intrinsic(op)) {
        /* Open MPI's MPI layer already rejects a predefined op on a derived datatype. */
        if (!ompi_datatype_is_predefined(dtype)) {
            *why = "a predefined op on a derived datatype";
            return 0;
        }
        int ompi_wrong = 0;
        if (own_kernel(dtype, op, &plan->reduction, &ompi_wrong) && plan->reduction.elem_size == (size_t)extent) {
            plan->kernel = "loom";
            plan->ompi_kernel_wrong = ompi_wrong;
            if (!ompi_mpi_thread_multiple) {
                last_plan.dtype = dtype;
                last_plan.op = op;
                last_plan.plan = *plan;
            }
            return 1;
        }
        char *msg = NULL;
        if (!ompi_op_is_valid(op, dtype, &msg, "loom")) {
            free(msg);
            *why = "the op is not defined on this datatype";
            return 0;
        }
    }

    plan->kernel = "ompi";
    /* Whole, so nothing own_kernel set before the extent check failed (fn3) is left over. */
    plan->reduction = (loom_reduction_t){.elem_size = (size_t)extent,
                                         .commutative = ompi_op_is_commute(op) ? 1 : 0,
                                         .fn = ompi_reduce_adapter,
                                         .ctx = plan,
                                         .fn3 = NULL};
    plan->holes = !loom_dense_instances(dtype);
    return 1;
}

/* ---- packing for data-movement collectives ---- */

size_t loom_type_size(struct ompi_datatype_t *dtype)
{
    size_t size;
    ompi_datatype_type_size(dtype, &size);
    return size;
}

ptrdiff_t loom_type_extent(struct ompi_datatype_t *dtype)
{
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    return extent;
}

void loom_type_true_extent(struct ompi_datatype_t *dtype, ptrdiff_t *true_lb, ptrdiff_t *true_extent)
{
    ompi_datatype_get_true_extent(dtype, true_lb, true_extent);
}

int loom_dense_run(struct ompi_datatype_t *dtype, size_t n)
{
    return n <= 1 ? ompi_datatype_is_contiguous_memory_layout(dtype, 1) : loom_dense_instances(dtype);
}

/* Packs (pack = 1) count x dtype at buf into the dense bytes at dense, or unpacks (pack = 0)
 * them back, through Open MPI's convertor. */
static int convert(int pack, void *buf, size_t count, struct ompi_datatype_t *dtype, void *dense)
{
    const size_t bytes = count * loom_type_size(dtype);
    if (0 == bytes) return OMPI_SUCCESS;
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    int rc =
        pack ? opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dtype->super, count, buf, 0, &conv)
             : opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dtype->super, count, buf, 0, &conv);
    if (OPAL_SUCCESS == rc) {
        struct iovec iov = {.iov_base = dense, .iov_len = bytes};
        uint32_t iov_count = 1;
        size_t max = bytes;
        const int32_t done = pack ? opal_convertor_pack(&conv, &iov, &iov_count, &max)
                                  : opal_convertor_unpack(&conv, &iov, &iov_count, &max);
        rc = done < 0 || max != bytes ? OMPI_ERROR : OMPI_SUCCESS;
    }
    OBJ_DESTRUCT(&conv);
    return rc;
}

int loom_pack(const void *buf, size_t count, struct ompi_datatype_t *dtype, void *out)
{
    return convert(1, (void *)buf, count, dtype, out);
}

int loom_unpack(const void *in, void *buf, size_t count, struct ompi_datatype_t *dtype)
{
    return convert(0, buf, count, dtype, (void *)in);
}
