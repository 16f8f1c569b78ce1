#include "fiber.hpp"

#include <new>
#include <stdexcept>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace loom {
namespace {
thread_local Fiber* current = nullptr;

// Stacks of the default size are kept for the next fiber of this thread: a simulation
// creates one per rank, and mapping and faulting in thousands of stacks per run costs more
// than the run. The pool stays mapped until the thread ends.
struct StackPool {
    std::vector<void*> free;
    std::size_t bytes = 0;
    ~StackPool()
    {
        for (void* s : free) munmap(s, bytes);
    }
};
thread_local StackPool pool;
constexpr std::size_t kPoolLimit = 1 << 15;
} // namespace

Fiber::Fiber(std::function<void()> body, std::size_t stack_bytes) : body_(std::move(body))
{
    const auto page = std::size_t(sysconf(_SC_PAGESIZE));
    mapped_ = (stack_bytes + page - 1) / page * page + page; // + the guard page
    if (mapped_ == pool.bytes && !pool.free.empty()) {
        stack_ = pool.free.back();
        pool.free.pop_back();
        return;
    }
    stack_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack_ == MAP_FAILED) throw std::bad_alloc();
    mprotect(stack_, page, PROT_NONE); // stacks grow down: the guard is the lowest page
}

Fiber::~Fiber()
{
    if (pool.bytes == 0) pool.bytes = mapped_;
    if (mapped_ == pool.bytes && pool.free.size() < kPoolLimit)
        pool.free.push_back(stack_);
    else
        munmap(stack_, mapped_);
}

void Fiber::trampoline()
{
    Fiber* self = current;
    try {
        self->body_();
    } catch (...) {
        self->failure_ = std::current_exception();
    }
    self->finished_ = true;
    // Returning would follow uc_link; switch back explicitly instead.
    swapcontext(&self->context_, &self->caller_);
}

void Fiber::resume()
{
    if (finished_) return;
    Fiber* outer = current;
    current = this;
    if (!started_) {
        started_ = true;
        getcontext(&context_);
        context_.uc_stack.ss_sp = stack_;
        context_.uc_stack.ss_size = mapped_;
        context_.uc_link = nullptr;
        makecontext(&context_, &Fiber::trampoline, 0);
    }
    swapcontext(&caller_, &context_);
    current = outer;
    if (failure_) {
        auto e = failure_;
        failure_ = nullptr;
        std::rethrow_exception(e);
    }
}

void Fiber::yield()
{
    Fiber* self = current;
    if (self == nullptr) throw std::logic_error("Fiber::yield outside a fiber");
    swapcontext(&self->context_, &self->caller_);
}

} // namespace loom
