; Issue 14's MFMA loop: one v_mfma_f32_16x16x32_bf16 per iteration, chained through the
; accumulator, `iters` iterations per wave (tools/emulator-speed.sh runs 64 one-wave workgroups).
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat>, <8 x bfloat>, <4 x float>, i32, i32, i32)
define amdgpu_kernel void @mfma(ptr addrspace(1) %ab, ptr addrspace(1) %out, i32 %iters) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = shl i32 %wg, 6
  %gid = add i32 %base, %tid
  %pa = getelementptr <8 x bfloat>, ptr addrspace(1) %ab, i32 %tid
  %a = load <8 x bfloat>, ptr addrspace(1) %pa
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %acc = phi <4 x float> [zeroinitializer, %entry], [%acc1, %loop]
  %acc1 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %a, <8 x bfloat> %a, <4 x float> %acc, i32 0, i32 0, i32 0)
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, %iters
  br i1 %more, label %loop, label %done
done:
  %p = getelementptr <4 x float>, ptr addrspace(1) %out, i32 %gid
  store <4 x float> %acc1, ptr addrspace(1) %p
  ret void
}
