; A kernel that never ends for an odd %n: i = 0, 2, 4, ... until i == n.
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @spin(ptr addrspace(1) %out, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%next, %loop]
  %next = add i32 %i, 2
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  store i32 %next, ptr addrspace(1) %out
  ret void
}
