# Generates transcend_cases.rs: correctly rounded 64-bit x87 results in all four
# rounding modes, computed with mpmath at 400 bits. Run: python3 transcend_cases.py > transcend_cases.rs
import mpmath as m, random
m.mp.prec=400
random.seed(7)
def to_f80(x, rc=0):
    # round to a 64-bit significand: rc 0 nearest-even, 1 down, 2 up, 3 toward zero
    if x==0: return (0,0)
    s = 1 if x<0 else 0
    x=abs(x)
    e=int(m.floor(m.log(x,2)))
    sig=x/m.mpf(2)**e*2**63
    if sig>=2**64: e+=1; sig=x/m.mpf(2)**e*2**63
    if sig<2**63: e-=1; sig=x/m.mpf(2)**e*2**63
    if rc==0: n=int(m.nint(sig))
    elif rc==3 or (rc==1 and s==0) or (rc==2 and s==1): n=int(m.floor(sig))
    else: n=int(m.ceil(sig))
    if n==2**64: n//=2; e+=1
    return ((s<<15)|(e+16383), n)
def val(se,mn):
    s=-1 if se>>15 else 1
    return s*m.mpf(mn)*m.mpf(2)**((se&0x7fff)-16383-63)
rows=[]
for i in range(24):
    se = 0x3FFF + random.randint(-3,1); mn=random.getrandbits(64)|(1<<63)
    if random.random()<0.5: se|=0x8000
    x=val(se,mn)
    rows.append(('sin',se,mn,0,0,m.sin(x)))
    rows.append(('cos',se,mn,0,0,m.cos(x)))
    rows.append(('tan',se,mn,0,0,m.tan(x)))
    if abs(x)<=1: rows.append(('f2xm1',se,mn,0,0,m.power(2,x)-1))
    se2 = 0x3FFF + random.randint(-5,5); mn2=random.getrandbits(64)|(1<<63)
    y=val(se2,mn2)
    rows.append(('atan',se,mn,se2,mn2,m.atan2(y,x)))
    rows.append(('yl2x',se&0x7fff,mn,se2,mn2,y*m.log(abs(x),2)))
    xs=x/8
    se3,mn3=to_f80(xs)
    rows.append(('yl2xp1',se3,mn3,se2,mn2,y*m.log(1+val(se3,mn3),2)))
# large argument
for se in [0x3FFF+40, 0x3FFF+62]:
    mn=random.getrandbits(64)|(1<<63); x=val(se,mn)
    rows.append(('sin',se,mn,0,0,m.sin(x)))
    rows.append(('cos',se,mn,0,0,m.cos(x)))
out=[]
for r in rows:
    for rc in range(4):
        out.append((r[0], rc) + tuple(r[1:5]) + to_f80(r[5], rc))
print("type Case = (&'static str, u16, u16, u64, u16, u64, u16, u64);")
print("static CASES: [Case; %d] = ["%len(out))
for r in out:
    print('    ("%s", %d, 0x%04x, 0x%016x, 0x%04x, 0x%016x, 0x%04x, 0x%016x),'%r)
print("];")
