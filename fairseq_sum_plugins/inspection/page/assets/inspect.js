(function(){
  var V=JSON.parse(document.getElementById('values').textContent);
  var S=JSON.parse(document.getElementById('specs').textContent);
  var POS={};
  // source position -> its token (a <sep> position has none: it is a sentence number)
  function pos(d){if(!POS[d]){POS[d]=[];document.querySelectorAll('#doc'+d+' .src .t').forEach(
    function(t){POS[d][+t.dataset.i]=t;});}return POS[d];}
  function fmt(v){return Math.abs(v)>=100||v===Math.round(v)?String(Math.round(v*1000)/1000):
    v.toPrecision(3).replace(/\.?0+$/,'');}
  function bar(rgb,lo,hi){return '<span class="cb"><span class="n">'+fmt(lo)+
    '</span><span class="grad" style="background:linear-gradient(to right,rgba('+rgb+
    ',0),rgba('+rgb+',1))"><span class="mid">'+fmt((lo+hi)/2)+'</span></span><span class="n">'+
    fmt(hi)+'</span></span>';}
  function esc(s){return String(s).replace(/[&<>"]/g,function(c){return{'&':'&amp;',
    '<':'&lt;','>':'&gt;','"':'&quot;'}[c];});}
  function spec(name,kind,sub){var s=Object.assign({},S.source[name]||S.unknown);
    ['label','what'].forEach(function(k){s[k]=s[k].replace(/\{name\}/g,name).replace(
      /\{kind\}/g,kind);});if(sub)s.label+=', '+bandName(sub);return s;}
  // as render.band_layer_name: 'layers.0.focus' (ETADS focus) -> 'encoder layer 1'
  function bandName(sub){var m=/^layers\.(\d+)\./.exec(sub);
    return m?'encoder layer '+(Number(m[1])+1):sub;}
  function clear(d){pos(d).forEach(function(t){if(!t)return;t.style.background='';t.title='';
    t.style.textDecoration='';t.classList.remove('band','centre','att');});
    document.querySelectorAll('#doc'+d+' .sm').forEach(function(s){s.classList.remove('pick');
      s.title='';});}
  function layer(d){var r=document.querySelector('input[name=l'+d+']:checked');
    return r&&r.value!=='none'?r.value.split(':'):null;}
  function chosenRun(d){var r=document.querySelector('input[name=r'+d+']:checked');
    return r?r.value:'output';}
  // a run's value of a layer; the reference run's source layers equal to the output run's are
  // left out of the page (the encoder's), so they are read from the output run
  function value(d,m,run,name){var runs=V[d].models[m].runs,r=runs[run]||runs.output;
    return name in r.values?r.values[name]:runs.output.values[name];}
  function focus(d,m,sub){var f=value(d,m,'output','focus');return f&&f[sub];}
  function band(d,m,sub,i,on){var f=focus(d,m,sub);if(!f)return;var ts=pos(d);
    for(var h=0;h<f.mu.length;h++){var mu=f.mu[h][i],s=f.sigma[h][i];
      for(var p=Math.ceil(mu-s);p<=Math.floor(mu+s);p++){if(ts[p-1])
        ts[p-1].classList.toggle('band',on);}
      var c=Math.round(mu);if(ts[c-1])ts[c-1].classList.toggle('centre',on);}}
  function draw(d,runOver){clear(d);var l=layer(d),lg=document.getElementById('legend'+d);
    if(!l){lg.innerHTML='';return;}
    var m=+l[0],name=l[1],sub=l.slice(2).join(':'),model=V[d].models[m];
    var kind=model.layers[name],sp=spec(name,kind,sub),ts=pos(d),n=V[d].source.length;
    var run=sp.run&&model.runs[runOver||chosenRun(d)]?(runOver||chosenRun(d)):'output';
    var x=new Array(n).fill(0),lo=0,hi=1,unit='';
    if(name==='copy_source'){var src=value(d,m,run,'copy_source'),pg=value(d,m,run,'p_gen');
      src.forEach(function(j,t){x[j]+=1-pg[t];});unit='summed copy share';}
    else if(kind==='band'){focus(d,m,sub).mu.forEach(function(row){row.forEach(function(mu){
      var c=Math.round(mu);if(c>=1&&c<=n)x[c-1]+=1;});});unit='centres';}
    else if(kind==='sentence'){var rows=value(d,m,run,name),
      sm=document.querySelectorAll('#doc'+d+' .sm');
      rows.forEach(function(row,k){var best=row.indexOf(Math.max.apply(null,row));
        if(sm[best]){sm[best].classList.add('pick');}});
      sm.forEach(function(s,j){s.title=rows.map(function(row,k){return 'slot '+(k+1)+': '+
        fmt(row[j]||0);}).join('; ');});
      ts.forEach(function(t,i){if(!t)return;var w=0;rows.forEach(function(row){
        w=Math.max(w,row[+t.dataset.s]||0);});x[i]=w;});unit='largest write weight';}
    else{x=value(d,m,run,name).slice();}
    if(sp.scale==='count')hi=Math.max(1,Math.max.apply(null,x));
    else if(sp.scale==='range'){lo=Math.min.apply(null,x);hi=Math.max.apply(null,x);
      if(hi===lo)hi=lo+1;}
    else{lo=sp.scale[0];hi=sp.scale[1];}
    x.forEach(function(v,i){var t=ts[i];if(!t)return;
      var a=Math.max(0,Math.min(1,(v-lo)/(hi-lo)));
      t.style.background='rgba('+sp.rgb+','+Math.round(a*1000)/1000+')';
      t.title=sp.label+': '+fmt(v)+(unit?' ('+unit+')':'');});
    if(name==='gate')(value(d,m,run,'removed')||[]).forEach(function(r,i){
      if(r&&ts[i])ts[i].style.textDecoration='line-through';});
    var from=sp.run?(run==='output'?"drawn from the beam output's run":
      'drawn from the reference run (teacher-forced on the reference)'):
      'the encoder\'s: the same for both runs';
    lg.innerHTML='<b>'+esc(model.name)+': '+esc(sp.label)+'</b> '+bar(sp.rgb,lo,hi)+
      ' <span class="from">'+from+'</span><div class="what">'+esc(sp.what)+'</div>';}
  function shadeOutputs(d,m){var r=document.querySelector('input[name="o'+d+'-'+m+'"]:checked');
    var key=r?r.value.split(':'):['none'];
    document.querySelectorAll('.out .t[data-d="'+d+'"][data-m="'+m+'"]').forEach(function(t){
      var vals=V[d].models[m].runs[t.dataset.r].values,i=+t.dataset.i,v=null,rgb;
      if(key[0]==='p_gen'&&vals.p_gen){v=1-vals.p_gen[i];rgb=S.output.p_gen.rgb;}
      else if(key[0]==='topic_share'&&vals.topic_share){v=vals.topic_share[+key[1]][i];
        rgb=S.output.topic_share.rgb;}
      t.style.background=v===null?'':'rgba('+rgb+','+Math.round(Math.max(0,Math.min(1,v))*1000)/
        1000+')';});}
  document.querySelectorAll('.layers input').forEach(function(r){
    r.addEventListener('change',function(){draw(+r.name.slice(1));});});
  document.querySelectorAll('.runs input').forEach(function(r){
    r.addEventListener('change',function(){draw(+r.name.slice(1));});});
  document.querySelectorAll('.oshade input').forEach(function(r){
    var p=r.name.slice(1).split('-');
    r.addEventListener('change',function(){shadeOutputs(+p[0],+p[1]);});});
  document.querySelectorAll('.src .t').forEach(function(t){
    var d=+t.dataset.d;function on(b){var l=layer(d);
      if(l&&V[d].models[+l[0]].layers[l[1]]==='band')band(d,+l[0],l.slice(2).join(':'),
        +t.dataset.i,b);}
    t.addEventListener('mouseenter',function(){on(true);});
    t.addEventListener('mouseleave',function(){on(false);});});
  document.querySelectorAll('.out .t').forEach(function(t){
    var d=+t.dataset.d,m=+t.dataset.m,run=t.dataset.r,i=+t.dataset.i;
    var a=(V[d].models[m].runs[run].values.attention||[])[i]||[];
    // a layer of the decoder is drawn from the hovered token's own run while it is hovered
    function on(b){var l=layer(d);if(l&&run!==chosenRun(d)){
        var sp=S.source[l[1]];if(!sp||sp.run)draw(d,b?run:null);}
      var ts=pos(d);a.forEach(function(p){if(ts[p[0]])ts[p[0]].classList.toggle('att',b);});}
    t.addEventListener('mouseenter',function(){on(true);});
    t.addEventListener('mouseleave',function(){on(false);});});
  // the address can switch things on and hover a token: #l0=0:gate&r0=reference&o0-0=p_gen&
  // hover=0,0,output,3 (a focus layer by its name, 0:focus:LAYER, or the first, 0:focus)
  location.hash.slice(1).split('&').forEach(function(kv){var p=kv.split('=');
    if(p[0]==='hover'||!p[1])return;var v=decodeURIComponent(p[1]);
    var rs=[].slice.call(document.querySelectorAll('input[name="'+p[0]+'"]'));
    var r=rs.filter(function(x){return x.value===v;})[0]||rs.filter(function(x){
      return x.value.indexOf(v+':')===0;})[0];if(r)r.checked=true;});
  document.querySelectorAll('.layers').forEach(function(l){draw(+l.dataset.d);});
  document.querySelectorAll('.oshade').forEach(function(o){
    shadeOutputs(+o.dataset.d,+o.dataset.m);});
  location.hash.slice(1).split('&').forEach(function(kv){var p=kv.split('=');
    if(p[0]!=='hover')return;var h=decodeURIComponent(p[1]).split(',');
    var t=document.querySelector('.t[data-d="'+h[0]+'"][data-m="'+h[1]+'"][data-r="'+h[2]+
      '"][data-i="'+h[3]+'"]')||document.querySelector('.src .t[data-d="'+h[0]+'"][data-i="'+
      h[1]+'"]');if(t)t.dispatchEvent(new Event('mouseenter'));});
  document.body.setAttribute('data-ready','1');
})();
