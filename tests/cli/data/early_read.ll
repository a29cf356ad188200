; out[t] = in[t] + 1 with the load in inline assembly that LLVM's waitcnt pass cannot see into:
; the add reads the loaded register before any s_waitcnt (a planted read-before-wait bug).
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @early(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %t
  %v = call i32 asm sideeffect "global_load_dword $0, $1, off", "=v,v"(ptr addrspace(1) %p)
  %w = add i32 %v, 1
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %w, ptr addrspace(1) %q
  ret void
}
