// Windows on x86-64: a context switch by hand, for weft's fibers where Boost.Context is not used (MinGW-w64).
//
// What a switch keeps, by the Win64 calling convention: the callee-saved general registers (rbx, rbp, rdi, rsi,
// r12-r15), xmm6-xmm15, and the MXCSR and x87 control words; the caller of weft_switch_context saves the rest, as
// for any call. And what Windows keeps per thread about the running stack, in the thread information block (gs:):
// the stack base (gs:0x08), its limit (gs:0x10), the start of its reservation (DeallocationStack, gs:0x1478), and
// the exception list (gs:0x00). The OS's exception dispatch checks every frame it walks against base and limit (a
// C++ exception thrown on a fiber whose bounds were the thread's would be refused as a bad stack), and stack growth
// and overflow read the reservation, so each context carries its own and the switch puts them in the running
// thread's block. The first three are what Boost.Context's Windows switch (jump_x86_64_ms_pe) keeps, at the offsets
// it uses, stable since Windows XP x64. The exception list is unused by 64-bit Windows itself, but Wine chains its
// own handler frames there (on the thread's stack) and its dispatcher calls every one whose address is below the
// frame being searched: a fiber stack at a higher address than the thread's would have the thread's outermost
// handler called in the middle of a C++ throw on the fiber, which then ended in std::terminate. So each context
// has its own list, a new one empty (the end marker, -1), as Windows's own SwitchToFiber keeps it.
// Not kept: the fiber-local-storage and fiber-data fields of the block (a thread that runs weft's fibers and the
// Windows fiber API's keeps the Windows fiber it had), and Control-flow Enforcement's shadow stack (a program built
// CET-compatible must not use these fibers; MinGW does not mark programs so).
//
// The saved frame, from the stack pointer a switch leaves (16-byte aligned) upwards, 288 bytes:
//   +0x00 MXCSR (4), x87 control word (2), padding   +0x10 .. +0xa0 xmm6 .. xmm15 (16 each), +0xb0 padding
//   +0xb8 exception list, +0xc0 reservation start, +0xc8 stack limit, +0xd0 stack base
//   +0xd8 r15, r14, r13, r12, rsi, rdi, rbx, rbp     +0x118 the return address
#include "src/context_switch.hpp"

#include <cstdint>
#include <cstring>

extern "C" void weft_context_start();

// weft_switch_context(from = rcx, to = rdx, arg = r8): pushes the frame above on the running stack, stores the
// stack pointer in *from, takes `to` as the stack pointer, pops its frame, and returns `arg` there.
// weft_context_start: where a new context's first switch returns to. r12 holds the entry; the argument arrives in
// rax as a switch's result. The stack pointer is then 16-byte aligned with 32 bytes of home space above it for the
// call, the first of them zero: an unwinder that walks past the entry finds a null return address and stops.
asm(R"(
    .text
    .p2align 4
    .globl weft_switch_context
    .def weft_switch_context; .scl 2; .type 32; .endef
weft_switch_context:
    pushq %rbp
    pushq %rbx
    pushq %rdi
    pushq %rsi
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    pushq %gs:0x08
    pushq %gs:0x10
    pushq %gs:0x1478
    pushq %gs:0x00
    subq $0xb8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movaps %xmm6, 0x10(%rsp)
    movaps %xmm7, 0x20(%rsp)
    movaps %xmm8, 0x30(%rsp)
    movaps %xmm9, 0x40(%rsp)
    movaps %xmm10, 0x50(%rsp)
    movaps %xmm11, 0x60(%rsp)
    movaps %xmm12, 0x70(%rsp)
    movaps %xmm13, 0x80(%rsp)
    movaps %xmm14, 0x90(%rsp)
    movaps %xmm15, 0xa0(%rsp)
    movq %rsp, (%rcx)
    movq %rdx, %rsp
    movaps 0x10(%rsp), %xmm6
    movaps 0x20(%rsp), %xmm7
    movaps 0x30(%rsp), %xmm8
    movaps 0x40(%rsp), %xmm9
    movaps 0x50(%rsp), %xmm10
    movaps 0x60(%rsp), %xmm11
    movaps 0x70(%rsp), %xmm12
    movaps 0x80(%rsp), %xmm13
    movaps 0x90(%rsp), %xmm14
    movaps 0xa0(%rsp), %xmm15
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $0xb8, %rsp
    popq %gs:0x00
    popq %gs:0x1478
    popq %gs:0x10
    popq %gs:0x08
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rsi
    popq %rdi
    popq %rbx
    popq %rbp
    movq %r8, %rax
    ret

    .p2align 4
    .globl weft_context_start
    .def weft_context_start; .scl 2; .type 32; .endef
    .seh_proc weft_context_start
weft_context_start:
    .seh_endprologue
    movq %rax, %rcx
    callq *%r12
    ud2
    .seh_endproc
)");

namespace weft::os {

namespace {

constexpr std::size_t kFrameBytes = 0x120;  // the frame above, return address included
constexpr std::size_t kStartBytes = 48;     // the start routine's home space and alignment, above the frame
constexpr std::size_t kWords = (kFrameBytes + kStartBytes) / 8;

}  // namespace

SavedContext make_context(void* top, void* low, void* reserved_low, ContextEntry entry) noexcept {
  const std::uintptr_t start = (reinterpret_cast<std::uintptr_t>(top) & ~std::uintptr_t{15}) - kStartBytes;
  auto* frame = reinterpret_cast<std::uint64_t*>(start - kFrameBytes);
  std::memset(frame, 0, kWords * 8);
  const unsigned mxcsr = __builtin_ia32_stmxcsr();
  std::uint16_t x87 = 0;
  asm volatile("fnstcw %0" : "=m"(x87));
  std::memcpy(frame, &mxcsr, 4);
  std::memcpy(reinterpret_cast<std::byte*>(frame) + 4, &x87, 2);
  frame[0xb8 / 8] = ~std::uint64_t{0};  // an empty exception list: its end marker, as CreateFiber starts a fiber with
  frame[0xc0 / 8] = reinterpret_cast<std::uintptr_t>(reserved_low);
  frame[0xc8 / 8] = reinterpret_cast<std::uintptr_t>(low);
  frame[0xd0 / 8] = reinterpret_cast<std::uintptr_t>(top);
  frame[0xf0 / 8] = reinterpret_cast<std::uintptr_t>(entry);  // r12
  frame[0x118 / 8] = reinterpret_cast<std::uintptr_t>(&weft_context_start);
  return frame;
}

}  // namespace weft::os
