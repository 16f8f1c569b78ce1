import csv,glob,statistics,re,collections,sys
d=collections.defaultdict(list)
for f in glob.glob(sys.argv[1]+'/*.csv'):
    m=re.search(r'/(\w+)-(\w+)-h(\d)x(\d)-(\w+)-(\d)\.csv',f); pml,rate,H,S,b,rep=m.groups()
    for r in csv.DictReader(open(f)):
        c=r['contender']
        if c=='ompi': b2='ompi'
        else: b2=b
        d[(f"{pml} {rate} {H}x{S}",r['collective'],int(r['bytes']),c,b2)].append(float(r['time_us']))
keys=sorted(set(k[:4] for k in d))
print("config collective bytes algorithm: base/new (>1: new faster), new us, base us, ompi us")
for k in keys:
    if k[3]=='ompi': continue
    base=statistics.median(d[k+('base',)]); new=statistics.median(d[k+('rel',)])
    om=statistics.median(d[k[:3]+('ompi','ompi')])
    print(f"{k[0]:16} {k[1]:10} {k[2]:8} {k[3]:18} {base/new:5.2f}  {new:9.1f} {base:9.1f} {om:9.1f}")
