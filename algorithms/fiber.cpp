// glibc's fortified longjmp refuses a jump to another stack ("longjmp causes uninitialized
// stack frame"), which is what a fiber switch is.
#undef _FORTIFY_SOURCE
#include "fiber.hpp"

#include <csetjmp>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

// Under valgrind, a switch between stacks closer than its --max-stackframe (2 MB) looks like
// a huge stack frame: memcheck then marks the other stack's live frames inaccessible and
// reports hundreds of thousands of false errors (nonblocking_check --threads, whose thread
// stacks lie near the fiber stacks). Registering each stack tells it where stacks are. The
// client requests are a few no-op instructions outside valgrind; header only, no library.
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define LOOM_STACK_REGISTER(lo, hi) VALGRIND_STACK_REGISTER(lo, hi)
#define LOOM_STACK_DEREGISTER(id)   VALGRIND_STACK_DEREGISTER(id)
#else
#define LOOM_STACK_REGISTER(lo, hi) 0u
#define LOOM_STACK_DEREGISTER(id)   (void)(id)
#endif

namespace loom {

namespace {
// A switch saves where this side goes on and jumps to where the other side does. GCC's
// builtin setjmp (clang's too, on x86-64) saves only the frame and stack pointers and the
// resume address - the compiler spills the callee-saved registers around it - and its jump
// restores those three: about 150 instructions per non-blocking operation fewer than glibc's
// _setjmp/_longjmp, which also unwind cleanup handlers (callgrind, an 8-byte MPI_Iallreduce).
// glibc's also keep an x86 shadow stack (CET) in step across stacks; the builtins do not, so
// a process that runs with one (opt-in: GLIBC_TUNABLES=glibc.cpu.x86_shstk=on) uses glibc's.
#if (defined(__GNUC__) && !defined(__clang__)) || (defined(__clang__) && defined(__x86_64__))
#define LOOM_BUILTIN_JUMPS     1
#define LOOM_BUILTIN_SAVE(buf) __builtin_setjmp(buf)
#else
#define LOOM_BUILTIN_JUMPS     0
#define LOOM_BUILTIN_SAVE(buf) 1 // never taken
#endif

bool shadow_stack_on()
{
#if defined(__x86_64__) && defined(SYS_arch_prctl)
    unsigned long features = 0; // ARCH_SHSTK_STATUS (Linux 6.6); older kernels refuse it: none
    return syscall(SYS_arch_prctl, 0x5005, &features) == 0 && (features & 1) != 0;
#else
    return false;
#endif
}
const bool builtin_jumps = LOOM_BUILTIN_JUMPS && !shadow_stack_on();

// Where one side of a switch goes on, in both forms; the process uses one (builtin_jumps).
struct Resume {
    void* builtin[5];
    std::jmp_buf glibc;
};

// Goes on where `to` was saved. Never in the function that saved it (the builtin's rule).
[[noreturn, gnu::noinline]] void jump_to(Resume& to)
{
#if LOOM_BUILTIN_JUMPS
    if (builtin_jumps) __builtin_longjmp(to.builtin, 1);
#endif
    _longjmp(to.glibc, 1);
}

// Saves where this frame goes on into `here`, then does `go` (which leaves: a jump, or a
// context's start); the statement ends when something jumps back to `here`. A macro: the
// save must be in the frame that goes on.
#define LOOM_SAVE_THEN(here, go)                          \
    do {                                                  \
        if (builtin_jumps) {                              \
            if (LOOM_BUILTIN_SAVE((here).builtin) == 0) { \
                go;                                       \
            }                                             \
        } else if (_setjmp((here).glibc) == 0) {          \
            go;                                           \
        }                                                 \
    } while (0)
} // namespace

struct Fiber::Context {
    void* stack = nullptr;
    std::size_t mapped = 0;
    unsigned valgrind_id = 0;  // the stack as registered with valgrind
    bool started = false;      // its run loop is on the stack (parked or running a fiber)
    bool default_size = false; // of kDefaultStack: may go to the pool
    Fiber* fiber = nullptr;
    ucontext_t start{}, starter{};
    Resume in{}, out{}; // where the fiber goes on; where its resumer goes on

    explicit Context(std::size_t stack_bytes)
    {
        const auto page = std::size_t(sysconf(_SC_PAGESIZE));
        mapped = (stack_bytes + page - 1) / page * page + page; // + the guard page
        default_size = mapped == (kDefaultStack + page - 1) / page * page + page;
        stack = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (stack == MAP_FAILED) throw std::bad_alloc();
        mprotect(stack, page, PROT_NONE); // stacks grow down: the guard is the lowest page
        valgrind_id = LOOM_STACK_REGISTER(static_cast<char*>(stack) + page, static_cast<char*>(stack) + mapped);
    }
    ~Context()
    {
        LOOM_STACK_DEREGISTER(valgrind_id);
        munmap(stack, mapped);
    }

    // The run loop, on the context's own stack: run a fiber's body, park, run the next.
    // Nothing here reads a thread_local: a parked context may be resumed on another thread.
    static void run(unsigned hi, unsigned lo)
    {
        auto* self = reinterpret_cast<Context*>((std::uintptr_t(hi) << 32) | std::uintptr_t(lo));
        for (;;) {
            Fiber* f = self->fiber;
            try {
                f->body_();
            } catch (...) {
                f->failure_ = std::current_exception();
            }
            f->finished_ = true;
            LOOM_SAVE_THEN(self->in, jump_to(self->out));
        }
    }
};

namespace {
thread_local Fiber* current = nullptr;

// Contexts of the default size are kept for the next fiber of this thread: a simulation
// creates one per rank and a non-blocking collective one per call, and mapping a stack or
// starting a context costs more than a short run. The pool stays until the thread ends.
// pool_gone: the pool was destroyed at the thread's end, and a fiber destroyed after it (one
// kept by another thread_local, resumable.cpp's pool of operations) deletes its context. A
// bool has no destructor, so it can be read until the thread is gone.
thread_local bool pool_gone = false;
struct ContextPool {
    std::vector<Fiber::Context*> free;
    ~ContextPool()
    {
        for (Fiber::Context* c : free) delete c;
        free.clear();
        pool_gone = true;
    }
};
thread_local ContextPool pool;
constexpr std::size_t kPoolLimit = 1 << 15;
} // namespace

Fiber::Fiber(std::function<void()> body, std::size_t stack_bytes) : body_(std::move(body))
{
    if (stack_bytes == kDefaultStack && !pool.free.empty()) {
        context_ = pool.free.back();
        pool.free.pop_back();
    } else {
        context_ = new Context(stack_bytes);
    }
    context_->fiber = this;
}

Fiber::~Fiber()
{
    // A context whose fiber stopped midway holds that fiber's frames: it cannot run another.
    const bool parked = finished_ || !context_->started;
    if (parked && context_->default_size && !pool_gone && pool.free.size() < kPoolLimit) {
        context_->fiber = nullptr;
        pool.free.push_back(context_);
    } else {
        delete context_;
    }
}

bool Fiber::rearm(std::function<void()> body)
{
    if (!finished_) return false;
    body_ = std::move(body);
    finished_ = false;
    failure_ = nullptr;
    return true;
}

void Fiber::resume()
{
    if (finished_) return;
    Fiber* outer = current;
    current = this;
    Context* c = context_;
    if (c->started) {
        LOOM_SAVE_THEN(c->out, jump_to(c->in));
    } else {
        // The first resume starts the stack's run loop; the body comes back to c->out.
        c->started = true;
        getcontext(&c->start);
        c->start.uc_stack.ss_sp = c->stack;
        c->start.uc_stack.ss_size = c->mapped;
        c->start.uc_link = nullptr;
        const auto p = reinterpret_cast<std::uintptr_t>(c);
        makecontext(&c->start, reinterpret_cast<void (*)()>(&Context::run), 2, unsigned(p >> 32),
                    unsigned(p & 0xffffffffu));
        LOOM_SAVE_THEN(c->out, swapcontext(&c->starter, &c->start)); // swapcontext never returns
    }
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
    Context* c = self->context_;
    LOOM_SAVE_THEN(c->in, jump_to(c->out));
}

} // namespace loom
