; Test kernels for the weft-emu command-line tests.
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
; out[i] = in[i] for i < n (bit-exact copy)
define amdgpu_kernel void @copy(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %bid, 64
  %i = add i32 %base, %tid
  %ok = icmp slt i32 %i, %n
  br i1 %ok, label %body, label %done
body:
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %i
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %i
  %v = load i32, ptr addrspace(1) %p
  store i32 %v, ptr addrspace(1) %q
  br label %done
done:
  ret void
}
