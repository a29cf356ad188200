; Issue 14's VALU loop: three dependent v_fma_f32 per iteration, `iters` iterations per work-item,
; one float stored per work-item (tools/emulator-speed.sh runs it as 256 workgroups of 256).
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare float @llvm.fma.f32(float, float, float)
define amdgpu_kernel void @valu(ptr addrspace(1) %out, i32 %iters) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = shl i32 %wg, 8
  %gid = add i32 %base, %tid
  %x0 = uitofp i32 %tid to float
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %x = phi float [%x0, %entry], [%x3, %loop]
  %x1 = call float @llvm.fma.f32(float %x, float 0x3FEFFFFFE0000000, float 1.0)
  %x2 = call float @llvm.fma.f32(float %x1, float 0x3FEFFFFFE0000000, float 1.0)
  %x3 = call float @llvm.fma.f32(float %x2, float 0x3FEFFFFFE0000000, float 1.0)
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, %iters
  br i1 %more, label %loop, label %done
done:
  %p = getelementptr float, ptr addrspace(1) %out, i32 %gid
  store float %x3, ptr addrspace(1) %p
  ret void
}
