(function(){
  var V=JSON.parse(document.getElementById('values').textContent);
  function toks(d){return document.querySelectorAll('#doc'+d+' .src .t');}
  function clear(d){toks(d).forEach(function(t){t.style.background='';t.title='';
    t.style.textDecoration='';
    t.classList.remove('band','centre','att');});
    document.querySelectorAll('#doc'+d+' .sm').forEach(function(s){s.classList.remove('pick');
      s.title='';});}
  function shade(t,v,rgb){t.style.background='rgba('+rgb+','+Math.max(0,Math.min(1,v))+')';}
  function band(d,m,i,on){var f=focus(d,m);if(!f)return;var ts=toks(d);
    for(var h=0;h<f.mu.length;h++){var mu=f.mu[h][i],s=f.sigma[h][i];
      for(var p=Math.ceil(mu-s);p<=Math.floor(mu+s);p++){if(p>=1&&p<=ts.length)
        ts[p-1].classList.toggle('band',on);}
      var c=Math.round(mu);if(c>=1&&c<=ts.length)ts[c-1].classList.toggle('centre',on);}}
  function focus(d,m){var ms=V[d].models[m],b=Object.keys(ms.layers).filter(function(n){
    return ms.layers[n]==='band';})[0];var f=b&&ms.runs.output.values[b];if(!f)return null;
    var k=Object.keys(f);return f[k[k.length-1]];}
  function layer(d){var r=document.querySelector('input[name=l'+d+']:checked');
    return r?r.value.split(':'):['none'];}
  function draw(d){clear(d);var l=layer(d);if(l[0]==='none')return;var m=+l[0],name=l[1];
    var vals=V[d].models[m].runs.output.values,ts=toks(d);
    var kind=V[d].models[m].layers[name];
    if(name==='copy_source'){var n=new Array(ts.length).fill(0);
      vals.copy_source.forEach(function(j,t){n[j]+=1-vals.p_gen[t];});
      var mx=Math.max.apply(null,n.concat([1e-9]));
      n.forEach(function(v,i){if(ts[i])shade(ts[i],v/mx,'214,39,40');});}
    else if(kind==='token'){var lo=Math.min.apply(null,vals[name]),
      span=Math.max.apply(null,vals[name])-lo||1;
      vals[name].forEach(function(v,i){if(ts[i]){shade(ts[i],(v-lo)/span,'255,170,0');
        ts[i].title=name+' '+v.toFixed(4);}});
      if(name==='gate')(vals.removed||[]).forEach(function(r,i){
        if(r&&ts[i])ts[i].style.textDecoration='line-through';});}
    else if(kind==='band'){var f=focus(d,m),n=new Array(ts.length).fill(0);
      f.mu.forEach(function(row){row.forEach(function(mu){var c=Math.round(mu);
        if(c>=1&&c<=ts.length)n[c-1]+=1;});});var mx=Math.max.apply(null,n.concat([1e-9]));
      n.forEach(function(v,i){shade(ts[i],v/mx,'31,119,180');});}
    else if(kind==='sentence'){var sm=document.querySelectorAll('#doc'+d+' .sm');
      vals[name].forEach(function(row,k){var best=row.indexOf(Math.max.apply(null,row));
        if(sm[best]){sm[best].classList.add('pick');sm[best].title+='slot '+(k+1)+' ';}});
      ts.forEach(function(t){var s=+t.dataset.s,w=0;vals[name].forEach(function(row){
        w=Math.max(w,row[s]||0);});shade(t,w,'44,160,44');});}}
  document.querySelectorAll('.layers input').forEach(function(r){
    r.addEventListener('change',function(){draw(+r.name.slice(1));});});
  document.querySelectorAll('.src .t').forEach(function(t){
    var d=+t.dataset.d;function on(b){var l=layer(d);
      if(l[0]!=='none'&&V[d].models[+l[0]].layers[l[1]]==='band')band(d,+l[0],+t.dataset.i,b);}
    t.addEventListener('mouseenter',function(){on(true);});
    t.addEventListener('mouseleave',function(){on(false);});});
  document.querySelectorAll('.out .t').forEach(function(t){
    var d=+t.dataset.d,m=+t.dataset.m,run=t.dataset.r,i=+t.dataset.i;
    var a=(V[d].models[m].runs[run].values.attention||[])[i]||[];
    function on(b){var ts=toks(d);a.forEach(function(p){if(ts[p[0]])
      ts[p[0]].classList.toggle('att',b);});}
    t.addEventListener('mouseenter',function(){on(true);});
    t.addEventListener('mouseleave',function(){on(false);});});
  // the address can switch layers on and hover a token: #l0=0:gate&hover=0,0,output,3
  location.hash.slice(1).split('&').forEach(function(kv){var p=kv.split('=');
    if(p[0].charAt(0)==='l'){var r=document.querySelector('input[name="'+p[0]+'"][value="'+
      decodeURIComponent(p[1])+'"]');if(r)r.checked=true;}});
  document.querySelectorAll('.layers').forEach(function(l){draw(+l.dataset.d);});
  location.hash.slice(1).split('&').forEach(function(kv){var p=kv.split('=');
    if(p[0]!=='hover')return;var h=decodeURIComponent(p[1]).split(',');
    var t=document.querySelector('.t[data-d="'+h[0]+'"][data-m="'+h[1]+'"][data-r="'+h[2]+
      '"][data-i="'+h[3]+'"]')||document.querySelector('.src .t[data-d="'+h[0]+'"][data-i="'+
      h[1]+'"]');if(t)t.dispatchEvent(new Event('mouseenter'));});
  document.body.setAttribute('data-ready','1');
})();
