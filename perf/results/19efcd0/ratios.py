# ratios.py DIR NAME...: per workload (W1, W2, W2b) and state (warm, fresh), the medians of
# kairos-hybrid and naive-stpe in DIR/NAME.jsonl and the median of their per-invocation ratios.
import json,sys,statistics as st,collections,os
# per build: median of kairos-hybrid and naive-stpe figures, and the median of per-invocation ratios
d=sys.argv[1]; builds=sys.argv[2:]
figs={'W1':['submits_per_s','p50_ns'],'W2':['pairs_per_s','p50_ns'],'W2b':['pairs_per_s','p50_ns']}
for w in ['W1','W2','W2b']:
  for state in ['warm','fresh']:
    print('== %s %s'%(w,state))
    for b in builds:
      recs=[json.loads(l) for l in open(os.path.join(d,b+'.jsonl'))]
      recs=[r for r in recs if r['workload']==w and bool(r['config'].get('warm'))==(state=='warm')]
      # pair by order: records come kairos then naive per invocation
      k=[r for r in recs if r['system']=='kairos-hybrid']; n=[r for r in recs if r['system']=='naive-stpe']
      if not k or not n: continue
      out=[]
      for f in figs[w]:
        kv=[r[f] for r in k]; nv=[r[f] for r in n]
        rat=[a/b_ for a,b_ in zip(kv,nv)]
        sc=1e6 if 'per_s' in f else 1
        out.append('%s k %.2f (%.2f-%.2f) n %.2f ratio %.2fx (%.2f-%.2f)'%(f,st.median(kv)/sc,min(kv)/sc,max(kv)/sc,st.median(nv)/sc,st.median(rat),min(rat),max(rat)))
      print('  %-7s n=%d  %s'%(b,len(k),' | '.join(out)))
