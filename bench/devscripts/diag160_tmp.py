import dataclasses, torch, sys
sys.path.insert(0, "tests/gpu")
from adaptqr.paths import schedules
from adaptqr.paths.householder import factor_householder
from adaptqr.testing import check_geqrf
class _Info:
    def __init__(self): self.routes=None; self.features={}
def fac(A, s):
    B,m,n=A.shape
    H=torch.empty_strided((B,m,n),(m*n,1,m),device="cuda"); H.copy_(A)
    tau=torch.empty((B,n),device="cuda"); factor_householder(H,tau,_Info(),schedule=s); return H,tau
for seed in range(3):
    torch.manual_seed(seed)
    A=torch.randn(160,512,512,device="cuda")
    s=schedules.schedule_for(512,512)
    out={}
    for name,var in (("cuda_pp",dict(w_pingpong=True)),("cuda_nopp",dict(w_pingpong=False)),("triton_pp",dict(cuda_panel=False,w_pingpong=True)),("triton_nopp",dict(cuda_panel=False,w_pingpong=False))):
        H,t=fac(A,dataclasses.replace(s,**var)); r=check_geqrf(A,H,t); out[name]=H
        print(seed,name,"factor %.3g orth %.3g"%(r.worst_factor,r.worst_orth), flush=True)
    for a,b in (("cuda_pp","triton_pp"),("cuda_nopp","triton_nopp"),("cuda_pp","cuda_nopp"),("triton_pp","triton_nopp")):
        print("  ",a,b,"%.3g"%float((out[a]-out[b]).norm()/out[a].norm()))
