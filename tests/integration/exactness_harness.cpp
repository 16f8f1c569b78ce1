// exactness_check's harness (see exactness_harness.hpp): layouts, values, guarded buffers and
// the runner of one call with loom's MPI_T counters.
#include "exactness_harness.hpp"

#include "loom_mpi_t.hpp"

#include <cstdio>
#include <cstring>

namespace exact {

Totals totals;

namespace {
MPI_Datatype vector_type = MPI_DATATYPE_NULL, padded_type = MPI_DATATYPE_NULL;

std::map<loom::Collective, loom::tools::LoomCounters> counters;

loom::tools::LoomCounters& counters_of(loom::Collective c)
{
    auto it = counters.find(c);
    if (it == counters.end()) {
        it = counters.emplace(c, loom::tools::LoomCounters{}).first;
        if (!it->second.open(std::string(loom::to_string(c)))) {
            std::fprintf(stderr, "FAIL: loom's MPI_T counters for %s are missing: loom is not loaded\n",
                         std::string(loom::to_string(c)).c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    return it->second;
}

std::string hex(unsigned v)
{
    char text[8];
    std::snprintf(text, sizeof text, "0x%02x", v);
    return text;
}
} // namespace

void make_types()
{
    MPI_Type_vector(2, 1, 2, MPI_INT, &vector_type);
    MPI_Type_create_resized(vector_type, 0, 16, &padded_type);
    MPI_Type_commit(&vector_type);
    MPI_Type_commit(&padded_type);
}

void free_types()
{
    MPI_Type_free(&vector_type);
    MPI_Type_free(&padded_type);
}

MPI_Datatype mpi_type(Shape s) { return s == Shape::ints ? MPI_INT : s == Shape::vector ? vector_type : padded_type; }
const char* name(Shape s) { return s == Shape::ints ? "int" : s == Shape::vector ? "vector" : "padded vector"; }
std::size_t extent(Shape s) { return s == Shape::ints ? 4 : s == Shape::vector ? 12 : 16; }
std::size_t ints_per(Shape s) { return s == Shape::ints ? 1 : 2; }
std::size_t int_offset(Shape s, std::size_t k) { return s == Shape::ints ? 4 * k : (k / 2) * extent(s) + (k % 2) * 8; }

int value(int a, int b, std::size_t k)
{
    std::uint32_t x = std::uint32_t(a + 3) * 0x9E3779B1u ^ std::uint32_t(b + 5) * 0x27D4EB2Fu;
    x ^= std::uint32_t(k) * 0x85EBCA77u + 0x165667B1u;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return int(x);
}

int sum_of_inputs(int size, std::size_t k)
{
    std::uint32_t acc = 0;
    for (int r = 0; r < size; ++r) acc += std::uint32_t(input(r, k));
    return int(acc);
}

void holey_sum(void* in, void* inout, int* len, MPI_Datatype* type)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(*type, &lb, &ext);
    for (int e = 0; e < *len; ++e)
        for (std::size_t at : {std::size_t(0), std::size_t(8)}) {
            std::uint32_t a, b;
            std::memcpy(&a, static_cast<char*>(in) + e * ext + at, 4);
            std::memcpy(&b, static_cast<char*>(inout) + e * ext + at, 4);
            b += a;
            std::memcpy(static_cast<char*>(inout) + e * ext + at, &b, 4);
        }
}

Buffer::Buffer(std::string role, std::size_t body_bytes, unsigned seed)
    : role_(std::move(role)), body_bytes_(body_bytes), mem_(body_bytes + 2 * kGuard)
{
    for (std::size_t i = 0; i < mem_.size(); ++i) mem_[i] = (unsigned char)(0xA5 ^ (i * 29 + seed * 53) ^ (i >> 7));
}

void Buffer::put(std::size_t offset, int v) { std::memcpy(mem_.data() + kGuard + offset, &v, sizeof v); }
void Buffer::expect(std::size_t offset, int v) { std::memcpy(expected_.data() + kGuard + offset, &v, sizeof v); }

void Buffer::part(std::string name, std::size_t offset, std::size_t elements, Shape shape, std::string detail)
{
    parts_.push_back({std::move(name), std::move(detail), offset, elements, shape});
}

std::string Buffer::describe(std::size_t at, std::string* region) const
{
    if (at < kGuard) return *region = "guard before the buffer";
    if (at >= kGuard + body_bytes_) return *region = "guard after the buffer";
    const std::size_t b = at - kGuard;
    for (const Part& p : parts_) {
        const std::size_t ext = extent(p.shape);
        if (b < p.offset || b >= p.offset + p.elements * ext) continue;
        const std::size_t e = (b - p.offset) / ext, w = (b - p.offset) % ext;
        const bool hole = p.shape != Shape::ints && (w / 4) % 2 == 1;
        *region = p.name + (hole ? ", a hole of the datatype" : "");
        return p.name + (p.detail.empty() ? "" : " " + p.detail) + ", element " + std::to_string(e) +
               (hole ? ", in a hole of the datatype" : "");
    }
    return *region = outside_;
}

std::string Buffer::compare(std::string* region) const
{
    if (std::memcmp(mem_.data(), expected_.data(), mem_.size()) == 0) return "";
    std::size_t first = mem_.size(), differ = 0;
    for (std::size_t i = 0; i < mem_.size(); ++i)
        if (mem_[i] != expected_[i]) {
            if (first == mem_.size()) first = i;
            ++differ;
        }
    const long offset = long(first) - long(kGuard);
    return role_ + " (" + std::to_string(body_bytes_) + " bytes): first bad byte at offset " + std::to_string(offset) +
           " (" + describe(first, region) + "): " + hex(mem_[first]) + ", expected " + hex(expected_[first]) + "; " +
           std::to_string(differ) + " bytes differ";
}

void fail(const Setting& s, const std::string& what, const std::string& key)
{
    if (totals.failures < totals.print_limit)
        std::fprintf(stderr, "FAIL rank %d/%d %s %s [%s] %s\n", s.rank, s.size, s.comm_name,
                     std::string(loom::to_string(s.collective)).c_str(),
                     s.label.empty() ? "loom's choice" : s.label.c_str(), what.c_str());
    ++totals.failures;
    ++totals.by_key[std::string(loom::to_string(s.collective)) + " [" + (s.label.empty() ? "loom's choice" : s.label) +
                    "] " + key];
}

void run_case(const Setting& s, const std::string& what, const std::string& kind, std::size_t message_bytes,
              std::initializer_list<Buffer*> buffers, const std::function<void()>& call)
{
    auto& c = counters_of(s.collective);
    const auto served0 = c.served(), declined0 = c.declined();
    call();
    const auto served = c.served() - served0, declined = c.declined() - declined0;
    const std::string prefix = kind.empty() ? "" : kind + ", ";
    for (Buffer* b : buffers) {
        if (b == nullptr) continue;
        ++totals.checks;
        std::string region;
        const std::string diff = b->compare(&region);
        if (!diff.empty()) fail(s, what + ": " + diff, prefix + region);
    }
    if (s.size < 2) return; // coll/self serves a communicator of one rank
    ++totals.checks;
    if (served + declined > 1)
        fail(s, what + ": loom counted " + std::to_string(served + declined) + " calls", "counters");
    if (s.forced == nullptr) return;
    loom::CallShape shape{s.size, message_bytes, true, s.nodes, s.most};
    shape.stencil = s.stencil;
    const auto no = loom::why_not(*s.forced, shape);
    if (!no) ++totals.calls_servable;
    totals.calls_served += long(served);
    if (!no && declined == 1)
        fail(s, what + ": loom declined a call the forced algorithm can serve", "declined a servable call");
    if (no && served == 1)
        fail(s, what + ": loom served a call the forced algorithm cannot serve (" + std::string(*no) + ")",
             "served an unservable call");
}

} // namespace exact
