var se,T,qe,kt,F,Ee,Oe,Ae,be,Z,z,De,ye,$e,he,St,ne={},oe=[],Ct=/acit|ex(?:s|g|n|p|$)|rph|grid|ows|mnc|ntw|ine[ch]|zoo|^ord|itera/i,re=Array.isArray;function U(e,t){for(var n in t)e[n]=t[n];return e}function ve(e){e&&e.parentNode&&e.parentNode.removeChild(e)}function ge(e,t,n){var o,s,a,r={};for(a in t)a=="key"?o=t[a]:a=="ref"?s=t[a]:r[a]=t[a];if(arguments.length>2&&(r.children=arguments.length>3?se.call(arguments,2):n),typeof e=="function"&&e.defaultProps!=null)for(a in e.defaultProps)r[a]===void 0&&(r[a]=e.defaultProps[a]);return ee(e,r,o,s,null)}function ee(e,t,n,o,s){var a={type:e,props:t,key:n,ref:o,__k:null,__:null,__b:0,__e:null,__c:null,constructor:void 0,__v:s??++qe,__i:-1,__u:0};return s==null&&T.vnode!=null&&T.vnode(a),a}function le(e){return e.children}function te(e,t){this.props=e,this.context=t}function M(e,t){if(t==null)return e.__?M(e.__,e.__i+1):null;for(var n;t<e.__k.length;t++)if((n=e.__k[t])!=null&&n.__e!=null)return n.__e;return typeof e.type=="function"?M(e):null}function xt(e){if(e.__P&&e.__d){var t=e.__v,n=t.__e,o=[],s=[],a=U({},t);a.__v=t.__v+1,T.vnode&&T.vnode(a),we(e.__P,a,t,e.__n,e.__P.namespaceURI,32&t.__u?[n]:null,o,n??M(t),!!(32&t.__u),s),a.__v=t.__v,a.__.__k[a.__i]=a,He(o,a,s),t.__e=t.__=null,a.__e!=n&&Re(a)}}function Re(e){if((e=e.__)!=null&&e.__c!=null)return e.__e=e.__c.base=null,e.__k.some(function(t){if(t!=null&&t.__e!=null)return e.__e=e.__c.base=t.__e}),Re(e)}function Ne(e){(!e.__d&&(e.__d=!0)&&F.push(e)&&!ae.__r++||Ee!=T.debounceRendering)&&((Ee=T.debounceRendering)||Oe)(ae)}function ae(){try{for(var e,t=1;F.length;)F.length>t&&F.sort(Ae),e=F.shift(),t=F.length,xt(e)}finally{F.length=ae.__r=0}}function Le(e,t,n,o,s,a,r,c,d,i,u){var _,l,m,f,y,k,v=o&&o.__k||oe,g=t.length;for(d=Tt(n,t,v,d,g),_=0;_<g;_++)(m=n.__k[_])!=null&&(l=m.__i!=-1&&v[m.__i]||ne,m.__i=_,k=we(e,m,l,s,a,r,c,d,i,u),f=m.__e,m.ref&&l.ref!=m.ref&&(l.ref&&ke(l.ref,null,m),u.push(m.ref,m.__c||f,m)),y==null&&f!=null&&(y=f),4&m.__u?(d=Ue(m,d,e),l.__e&&(l.__e=null)):typeof m.type=="function"&&k!==void 0?d=k:f&&(d=f.nextSibling),m.__u&=-7);return n.__e=y,d}function Tt(e,t,n,o,s){var a,r,c,d,i,u=n.length,_=u,l=0;for(e.__k=new Array(s),a=0;a<s;a++)(r=t[a])!=null&&typeof r!="boolean"&&typeof r!="function"?(typeof r=="string"||typeof r=="number"||typeof r=="bigint"||r.constructor==String?r=e.__k[a]=ee(null,r,null,null,null):re(r)?r=e.__k[a]=ee(le,{children:r},null,null,null):r.constructor===void 0&&r.__b>0?r=e.__k[a]=ee(r.type,r.props,r.key,r.ref?r.ref:null,r.__v):e.__k[a]=r,d=a+l,r.__=e,r.__b=e.__b+1,c=null,(i=r.__i=Et(r,n,d,_))!=-1&&(_--,(c=n[i])&&(c.__u|=2)),c==null||c.__v==null?(i==-1&&(s>u?l--:s<u&&l++),typeof r.type!="function"&&(r.__u|=4)):i!=d&&(i==d-1?l--:i==d+1?l++:(i>d?l--:l++,r.__u|=4))):e.__k[a]=null;if(_)for(a=0;a<u;a++)(c=n[a])!=null&&(2&c.__u)==0&&(c.__e==o&&(o=M(c)),Ve(c,c));return o}function Ue(e,t,n){var o,s;if(typeof e.type=="function"){for(o=e.__k,s=0;o&&s<o.length;s++)o[s]&&(o[s].__=e,t=Ue(o[s],t,n));return t}e.__e!=t&&(t&&e.type&&!t.parentNode&&(t=M(e)),t=n.insertBefore(e.__e,t||null));do t=t&&t.nextSibling;while(t!=null&&t.nodeType==8);return t}function Et(e,t,n,o){var s,a,r,c=e.key,d=e.type,i=t[n],u=i!=null&&(2&i.__u)==0;if(i===null&&c==null||u&&c==i.key&&d==i.type)return n;if(o>(u?1:0)){for(s=n-1,a=n+1;s>=0||a<t.length;)if((i=t[r=s>=0?s--:a++])!=null&&(2&i.__u)==0&&c==i.key&&d==i.type)return r}return-1}function Pe(e,t,n){t[0]=="-"?e.setProperty(t,n??""):e[t]=n==null?"":typeof n!="number"||Ct.test(t)?n:n+"px"}function X(e,t,n,o,s){var a,r;e:if(t=="style")if(typeof n=="string")e.style.cssText=n;else{if(typeof o=="string"&&(e.style.cssText=o=""),o)for(t in o)n&&t in n||Pe(e.style,t,"");if(n)for(t in n)o&&n[t]==o[t]||Pe(e.style,t,n[t])}else if(t[0]=="o"&&t[1]=="n")a=t!=(t=t.replace(De,"$1")),r=t.toLowerCase(),t=r in e||t=="onFocusOut"||t=="onFocusIn"?r.slice(2):t.slice(2),e.l||(e.l={}),e.l[t+a]=n,n?o?n[z]=o[z]:(n[z]=ye,e.addEventListener(t,a?he:$e,a)):e.removeEventListener(t,a?he:$e,a);else{if(s=="http://www.w3.org/2000/svg")t=t.replace(/xlink(H|:h)/,"h").replace(/sName$/,"s");else if(t!="width"&&t!="height"&&t!="href"&&t!="list"&&t!="form"&&t!="tabIndex"&&t!="download"&&t!="rowSpan"&&t!="colSpan"&&t!="role"&&t!="popover"&&t in e)try{e[t]=n??"";break e}catch{}typeof n=="function"||(n==null||n===!1&&t[4]!="-"?e.removeAttribute(t):e.setAttribute(t,t=="popover"&&n==1?"":n))}}function je(e){return function(t){if(this.l){var n=this.l[t.type+e];if(t[Z]==null)t[Z]=ye++;else if(t[Z]<n[z])return;return n(T.event?T.event(t):t)}}}function we(e,t,n,o,s,a,r,c,d,i){var u,_,l,m,f,y,k,v,g,q,w,A,L,G,W,fe,D=t.type;if(t.constructor!==void 0)return null;128&n.__u&&(d=!!(32&n.__u),a=[c=t.__e=n.__e]),(u=T.__b)&&u(t);e:if(typeof D=="function"){_=r.length;try{if(g=t.props,q=D.prototype&&D.prototype.render,w=(u=D.contextType)&&o[u.__c],A=u?w?w.props.value:u.__:o,n.__c?v=(l=t.__c=n.__c).__=l.__E:(q?t.__c=l=new D(g,A):(t.__c=l=new te(g,A),l.constructor=D,l.render=Pt),w&&w.sub(l),l.state||(l.state={}),l.__n=o,m=l.__d=!0,l.__h=[],l._sb=[]),q&&l.__s==null&&(l.__s=l.state),q&&D.getDerivedStateFromProps!=null&&(l.__s==l.state&&(l.__s=U({},l.__s)),U(l.__s,D.getDerivedStateFromProps(g,l.__s))),f=l.props,y=l.state,l.__v=t,m)q&&D.getDerivedStateFromProps==null&&l.componentWillMount!=null&&l.componentWillMount(),q&&l.componentDidMount!=null&&l.__h.push(l.componentDidMount);else{if(q&&D.getDerivedStateFromProps==null&&g!==f&&l.componentWillReceiveProps!=null&&l.componentWillReceiveProps(g,A),t.__v==n.__v||!l.__e&&l.shouldComponentUpdate!=null&&l.shouldComponentUpdate(g,l.__s,A)===!1){t.__v!=n.__v&&(l.props=g,l.state=l.__s,l.__d=!1),t.__e=n.__e,t.__k=n.__k,t.__k.some(function(K){K&&(K.__=t)}),oe.push.apply(l.__h,l._sb),l._sb=[],l.__h.length&&r.push(l),c=M(n);break e}l.componentWillUpdate!=null&&l.componentWillUpdate(g,l.__s,A),q&&l.componentDidUpdate!=null&&l.__h.push(function(){l.componentDidUpdate(f,y,k)})}if(l.context=A,l.props=g,l.__P=e,l.__e=!1,L=T.__r,G=0,q)l.state=l.__s,l.__d=!1,L&&L(t),u=l.render(l.props,l.state,l.context),oe.push.apply(l.__h,l._sb),l._sb=[];else do l.__d=!1,L&&L(t),u=l.render(l.props,l.state,l.context),l.state=l.__s;while(l.__d&&++G<25);l.state=l.__s,l.getChildContext!=null&&(o=U(U({},o),l.getChildContext())),q&&!m&&l.getSnapshotBeforeUpdate!=null&&(k=l.getSnapshotBeforeUpdate(f,y)),W=u!=null&&u.type===le&&u.key==null?Fe(u.props.children):u,c=Le(e,re(W)?W:[W],t,n,o,s,a,r,c,d,i),l.base=t.__e,t.__u&=-161,l.__h.length&&r.push(l),v&&(l.__E=l.__=null)}catch(K){if(r.length=_,t.__v=null,d||a!=null){if(K.then){for(t.__u|=d?160:128;c&&c.nodeType==8&&c.nextSibling;)c=c.nextSibling;a!=null&&(a[a.indexOf(c)]=null),t.__e=c}else if(a!=null)for(fe=a.length;fe--;)ve(a[fe])}else t.__e=n.__e;t.__k==null&&(t.__k=n.__k||[]),K.then||Ie(t),T.__e(K,t,n)}}else a==null&&t.__v==n.__v?(t.__k=n.__k,t.__e=n.__e):c=t.__e=Nt(n.__e,t,n,o,s,a,r,d,i);return(u=T.diffed)&&u(t),128&t.__u?void 0:c}function Ie(e){e&&(e.__c&&(e.__c.__e=!0),e.__k&&e.__k.some(Ie))}function He(e,t,n){for(var o=0;o<n.length;o++)ke(n[o],n[++o],n[++o]);T.__c&&T.__c(t,e),e.some(function(s){try{e=s.__h,s.__h=[],e.some(function(a){a.call(s)})}catch(a){T.__e(a,s.__v)}})}function Fe(e){return typeof e!="object"||e==null||e.__b>0?e:re(e)?e.map(Fe):e.constructor!==void 0?null:U({},e)}function Nt(e,t,n,o,s,a,r,c,d){var i,u,_,l,m,f,y,k=n.props||ne,v=t.props,g=t.type;if(g=="svg"?s="http://www.w3.org/2000/svg":g=="math"?s="http://www.w3.org/1998/Math/MathML":s||(s="http://www.w3.org/1999/xhtml"),a!=null){for(i=0;i<a.length;i++)if((m=a[i])&&"setAttribute"in m==!!g&&(g?m.localName==g:m.nodeType==3)){e=m,a[i]=null;break}}if(e==null){if(g==null)return document.createTextNode(v);e=document.createElementNS(s,g,v.is&&v),c&&(T.__m&&T.__m(t,a),c=!1),a=null}if(g==null)k===v||c&&e.data==v||(e.data=v);else{if(a=g=="textarea"&&v.defaultValue!=null?null:a&&se.call(e.childNodes),!c&&a!=null)for(k={},i=0;i<e.attributes.length;i++)k[(m=e.attributes[i]).name]=m.value;for(i in k)m=k[i],i=="dangerouslySetInnerHTML"?_=m:i=="children"||i in v||i=="value"&&"defaultValue"in v||i=="checked"&&"defaultChecked"in v||X(e,i,null,m,s);for(i in v)m=v[i],i=="children"?l=m:i=="dangerouslySetInnerHTML"?u=m:i=="value"?f=m:i=="checked"?y=m:c&&typeof m!="function"||k[i]===m||X(e,i,m,k[i],s);if(u)c||_&&(u.__html==_.__html||u.__html==e.innerHTML)||(e.innerHTML=u.__html),t.__k=[];else if(_&&(e.innerHTML=""),Le(t.type=="template"?e.content:e,re(l)?l:[l],t,n,o,g=="foreignObject"?"http://www.w3.org/1999/xhtml":s,a,r,a?a[0]:n.__k&&M(n,0),c,d),a!=null)for(i=a.length;i--;)ve(a[i]);c&&g!="textarea"||(i="value",g=="progress"&&f==null?e.removeAttribute("value"):f!=null&&(f!==e[i]||g=="progress"&&!f||g=="option"&&f!=k[i])&&X(e,i,f,k[i],s),i="checked",y!=null&&y!=e[i]&&X(e,i,y,k[i],s))}return e}function ke(e,t,n){try{if(typeof e=="function"){var o=typeof e.__u=="function";o&&e.__u(),o&&t==null||(e.__u=e(t))}else e.current=t}catch(s){T.__e(s,n)}}function Ve(e,t,n){var o,s;if(T.unmount&&T.unmount(e),(o=e.ref)&&(o.current&&o.current!=e.__e||ke(o,null,t)),(o=e.__c)!=null){if(o.componentWillUnmount)try{o.componentWillUnmount()}catch(a){T.__e(a,t)}o.base=o.__P=o.__n=null}if(o=e.__k)for(s=0;s<o.length;s++)o[s]&&Ve(o[s],t,n||typeof e.type!="function");n||ve(e.__e),e.__c=e.__=e.__e=void 0}function Pt(e,t,n){return this.constructor(e,n)}function Be(e,t,n){var o,s,a,r;t==document&&(t=document.documentElement),T.__&&T.__(e,t),s=(o=typeof n=="function")?null:n&&n.__k||t.__k,a=[],r=[],we(t,e=(!o&&n||t).__k=ge(le,null,[e]),s||ne,ne,t.namespaceURI,!o&&n?[n]:s?null:t.firstChild?se.call(t.childNodes):null,a,!o&&n?n:s?s.__e:t.firstChild,o,r),He(a,e,r),e.props.children=null}se=oe.slice,T={__e:function(e,t,n,o){for(var s,a,r;t=t.__;)if((s=t.__c)&&!s.__)try{if((a=s.constructor)&&a.getDerivedStateFromError!=null&&(s.setState(a.getDerivedStateFromError(e)),r=s.__d),s.componentDidCatch!=null&&(s.componentDidCatch(e,o||{}),r=s.__d),r)return s.__E=s}catch(c){e=c}throw e}},qe=0,kt=function(e){return e!=null&&e.constructor===void 0},te.prototype.setState=function(e,t){var n;n=this.__s!=null&&this.__s!=this.state?this.__s:this.__s=U({},this.state),typeof e=="function"&&(e=e(U({},n),this.props)),e&&U(n,e),e!=null&&this.__v&&(t&&this._sb.push(t),Ne(this))},te.prototype.forceUpdate=function(e){this.__v&&(this.__e=!0,e&&this.__h.push(e),Ne(this))},te.prototype.render=le,F=[],Oe=typeof Promise=="function"?Promise.prototype.then.bind(Promise.resolve()):setTimeout,Ae=function(e,t){return e.__v.__b-t.__v.__b},ae.__r=0,be=Math.random().toString(8),Z="__d"+be,z="__a"+be,De=/(PointerCapture)$|Capture$/i,ye=0,$e=je(!1),he=je(!0),St=0;var Q,P,Se,Me,ce=0,Xe=[],j=T,Je=j.__b,We=j.__r,Ke=j.diffed,Ge=j.__c,ze=j.unmount,Qe=j.__;function xe(e,t){j.__h&&j.__h(P,e,ce||t),ce=0;var n=P.__H||(P.__H={__:[],__h:[]});return e>=n.__.length&&n.__.push({}),n.__[e]}function $(e){return ce=1,jt(tt,e)}function jt(e,t,n){var o=xe(Q++,2);if(o.t=e,!o.__c&&(o.__=[n?n(t):tt(void 0,t),function(c){var d=o.__N?o.__N[0]:o.__[0],i=o.t(d,c);d!==i&&(o.__N=[i,o.__[1]],o.__c.setState({}))}],o.__c=P,!P.__f)){var s=function(c,d,i){if(!o.__c.__H)return!0;var u=!1,_=o.__c.props!==c;if(o.__c.__H.__.some(function(m){if(m.__N){u=!0;var f=m.__[0];m.__=m.__N,m.__N=void 0,f!==m.__[0]&&(_=!0)}}),a){var l=a.call(this,c,d,i);return u?l||_:l}return!u||_};P.__f=!0;var a=P.shouldComponentUpdate,r=P.componentWillUpdate;P.componentWillUpdate=function(c,d,i){if(this.__e){var u=a;a=void 0,s(c,d,i),a=u}r&&r.call(this,c,d,i)},P.shouldComponentUpdate=s}return o.__N||o.__}function ue(e,t){var n=xe(Q++,3);!j.__s&&et(n.__H,t)&&(n.__=e,n.u=t,P.__H.__h.push(n))}function qt(e,t){var n=xe(Q++,7);return et(n.__H,t)&&(n.__=e(),n.__H=t,n.__h=e),n.__}function Ze(e,t){return ce=8,qt(function(){return e},t)}function Ot(){for(var e;e=Xe.shift();){var t=e.__H;if(e.__P&&t)try{t.__h.some(ie),t.__h.some(Ce),t.__h=[]}catch(n){t.__h=[],j.__e(n,e.__v)}}}j.__b=function(e){P=null,Je&&Je(e)},j.__=function(e,t){e&&t.__k&&t.__k.__m&&(e.__m=t.__k.__m),Qe&&Qe(e,t)},j.__r=function(e){We&&We(e),Q=0;var t=(P=e.__c).__H;t&&(Se===P?(t.__h=[],P.__h=[],t.__.some(function(n){n.__N&&(n.__=n.__N),n.u=n.__N=void 0})):(t.__h.some(ie),t.__h.some(Ce),t.__h=[],Q=0)),Se=P},j.diffed=function(e){Ke&&Ke(e);var t=e.__c;t&&t.__H&&(t.__H.__h.length&&(Xe.push(t)!==1&&Me===j.requestAnimationFrame||((Me=j.requestAnimationFrame)||At)(Ot)),t.__H.__.some(function(n){n.u&&(n.__H=n.u,n.u=void 0)})),Se=P=null},j.__c=function(e,t){t.some(function(n){try{n.__h.some(ie),n.__h=n.__h.filter(function(o){return!o.__||Ce(o)})}catch(o){t.some(function(s){s.__h&&(s.__h=[])}),t=[],j.__e(o,n.__v)}}),Ge&&Ge(e,t)},j.unmount=function(e){ze&&ze(e);var t,n=e.__c;n&&n.__H&&(n.__H.__.some(function(o){try{ie(o)}catch(s){t=s}}),n.__H=void 0,t&&j.__e(t,n.__v))};var Ye=typeof requestAnimationFrame=="function";function At(e){var t,n=function(){clearTimeout(o),Ye&&cancelAnimationFrame(t),setTimeout(e)},o=setTimeout(n,35);Ye&&(t=requestAnimationFrame(n))}function ie(e){var t=P,n=e.__c;typeof n=="function"&&(e.__c=void 0,n()),P=t}function Ce(e){var t=P;e.__c=e.__(),P=t}function et(e,t){return!e||e.length!==t.length||t.some(function(n,o){return n!==e[o]})}function tt(e,t){return typeof t=="function"?t(e):t}var ot=function(e,t,n,o){var s;t[0]=0;for(var a=1;a<t.length;a++){var r=t[a++],c=t[a]?(t[0]|=r?1:2,n[t[a++]]):t[++a];r===3?o[0]=c:r===4?o[1]=Object.assign(o[1]||{},c):r===5?(o[1]=o[1]||{})[t[++a]]=c:r===6?o[1][t[++a]]+=c+"":r?(s=e.apply(c,ot(e,c,n,["",null])),o.push(s),c[0]?t[0]|=2:(t[a-2]=0,t[a]=s)):o.push(c)}return o},nt=new Map;function at(e){var t=nt.get(this);return t||(t=new Map,nt.set(this,t)),(t=ot(this,t.get(e)||(t.set(e,t=function(n){for(var o,s,a=1,r="",c="",d=[0],i=function(l){a===1&&(l||(r=r.replace(/^\s*\n\s*|\s*\n\s*$/g,"")))?d.push(0,l,r):a===3&&(l||r)?(d.push(3,l,r),a=2):a===2&&r==="..."&&l?d.push(4,l,0):a===2&&r&&!l?d.push(5,0,!0,r):a>=5&&((r||!l&&a===5)&&(d.push(a,0,r,s),a=6),l&&(d.push(a,l,0,s),a=6)),r=""},u=0;u<n.length;u++){u&&(a===1&&i(),i(u));for(var _=0;_<n[u].length;_++)o=n[u][_],a===1?o==="<"?(i(),d=[d],a=3):r+=o:a===4?r==="--"&&o===">"?(a=1,r=""):r=o+r[0]:c?o===c?c="":r+=o:o==='"'||o==="'"?c=o:o===">"?(i(),a=1):a&&(o==="="?(a=5,s=r,r=""):o==="/"&&(a<5||n[u][_+1]===">")?(i(),a===3&&(d=d[0]),a=d,(d=d[0]).push(2,0,a),a=0):o===" "||o==="	"||o===`
`||o==="\r"?(i(),a=2):r+=o),a===3&&r==="!--"&&(a=4,d=d[0])}return i(),d}(e)),t),arguments,[])).length>1?t:t[0]}var p=at.bind(ge);function C(e,t){let[n,o]=$({data:null,error:null,loading:!0}),s=Ze(()=>{o(a=>({...a,loading:!0})),e().then(a=>o({data:a,error:null,loading:!1}),a=>o({data:null,error:a,loading:!1}))},t);return ue(s,[s]),{...n,reload:s}}function S({error:e}){return e?p`<p class="error" role="alert">${e.message??String(e)}</p>`:null}function b({id:e,label:t,children:n,hint:o}){return p`<div class="field"><label for=${e}>${t}</label>${n}${o?p`<small class="muted">${o}</small>`:null}</div>`}function E({offset:e,limit:t,count:n,onChange:o,label:s="Pages"}){return p`
    <nav class="pager" aria-label=${s}>
      <button type="button" class="secondary" disabled=${e===0}
        onClick=${()=>o(Math.max(0,e-t))}>Previous</button>
      <span>${n===0?"No rows":`Rows ${e+1}\u2013${e+n}`}</span>
      <button type="button" class="secondary" disabled=${n<t}
        onClick=${()=>o(e+t)}>Next</button>
    </nav>
  `}function x({columns:e,rows:t,caption:n,empty:o="Nothing yet"}){return!t||t.length===0?p`<p class="muted">${o}</p>`:p`
    <div class="table-wrap" tabindex="0" role="region" aria-label=${n??"Table"}>
      <table>${n?p`<caption>${n}</caption>`:null}
        <thead><tr>${e.map(s=>p`<th scope="col">${s.label}</th>`)}</tr></thead>
        <tbody>${t.map((s,a)=>p`<tr key=${s.id??a}>${e.map(r=>p`<td>${r.render?r.render(s):Dt(s[r.key])}</td>`)}</tr>`)}</tbody>
      </table>
    </div>
  `}function Dt(e){return e==null?"\u2014":typeof e=="object"?JSON.stringify(e):String(e)}function I({value:e,label:t}){return p`<pre class="json" aria-label=${t}>${typeof e=="string"?e:JSON.stringify(e,null,2)}</pre>`}function O(e,t){return()=>{globalThis.confirm(e)&&t()}}function V({title:e,bars:t,unit:n=""}){let c=Math.max(1,...t.map(i=>Number(i.value)||0)),d=t.length*30+8;return p`
    <figure class="chart">
      <figcaption>${e}</figcaption>
      <svg viewBox=${`0 0 360 ${d}`} role="img" aria-label=${e}>
          ${t.map((i,u)=>{let _=8+u*30,l=(Number(i.value)||0)/c*180;return p`
              <g key=${i.label}>
                <text x="0" y=${_+15} class="chart-label">${i.label}</text>
                <rect x=${110} y=${_} width=${Math.max(1,l)} height=${22} rx="3" class=${`bar ${i.tone??""}`}></rect>
                <text x=${110+l+6} y=${_+15} class="chart-value">${i.value===null||i.value===void 0?"\u2014":`${Rt(i.value)}${n}`}</text>
              </g>
            `})}
        </svg>
    </figure>
  `}var Rt=e=>Math.round(Number(e)*100)/100;function B({tabs:e,current:t,onChange:n,label:o}){return p`<div role="tablist" aria-label=${o} class="tabs" onKeyDown=${a=>{let r=e.findIndex(([i])=>i===t),c=a.key==="ArrowRight"?1:a.key==="ArrowLeft"?-1:0;if(!c)return;let d=e[(r+c+e.length)%e.length][0];n(d),requestAnimationFrame(()=>document.getElementById(`tab-${d}`)?.focus())}}>${e.map(([a,r])=>p`
        <button type="button" role="tab" id=${`tab-${a}`} aria-selected=${a===t}
          tabindex=${a===t?0:-1} onClick=${()=>n(a)}>${r}</button>
      `)}</div>`}function N(e){return e.preventDefault(),Object.fromEntries(new FormData(e.currentTarget).entries())}function J(e,t){if(!(!e||!e.trim()))try{return JSON.parse(e)}catch{throw new Error(`${t} is not valid JSON`)}}var Lt=()=>document.getElementById("app")?.dataset.project??"default",de=class extends Error{constructor(t,n,o){super(o),this.status=t,this.code=n}};async function h(e,{method:t="GET",body:n,headers:o={}}={}){let s=e.startsWith("/v1/admin/")?e:`/console/api/${Lt()}${e}`,a={method:t,headers:{...o},credentials:"same-origin"};n!==void 0&&(a.headers["content-type"]="application/json",a.body=JSON.stringify(n));let r=await fetch(s,a);if(r.status===401)throw location.reload(),new de(401,"UNAUTHORIZED","Signed out");let c=await r.text(),d=null;try{d=c?JSON.parse(c):null}catch{d=null}if(!r.ok){let u=d?.error??d??{};throw new de(r.status,u.code??String(r.status),u.message??r.statusText)}let i=d&&typeof d=="object"&&"data"in d&&!Array.isArray(d);return{data:i?d.data:d,meta:i?d.meta:null,headers:r.headers,status:r.status}}function H(e){let t=new URLSearchParams;for(let[o,s]of Object.entries(e))s!=null&&s!==""&&t.set(o,s);let n=t.toString();return n?`?${n}`:""}var st=20;function rt(e,t){let n=document.getElementById("project-select");if(!n)return;let o=[...n.options].find(a=>a.value===e);if(t===null)return o?.remove();if(o)return;let s=document.createElement("option");s.value=e,s.textContent=`${t} (${e})`,n.append(s)}function lt(){let e=C(()=>h("/v1/admin/projects").then(m=>m.data),[]),[t,n]=$(0),[o,s]=$(null),[a,r]=$({}),c=m=>m().catch(s),d=m=>{let f=N(m),y=m.currentTarget;c(async()=>{let{data:k}=await h("/v1/admin/projects",{method:"POST",body:{ref:f.ref,...f.name?{name:f.name}:{}}});s(null),r(v=>({...v,[k.ref]:k})),rt(k.ref,k.name??k.ref),y.reset(),e.reload()})},i=m=>c(async()=>{let{data:f}=await h(`/v1/admin/projects/${encodeURIComponent(m)}`);r(y=>({...y,[m]:f}))}),u=(m,f)=>O(`Rotate the ${f} key of "${m}"? The old key stops working at once.`,()=>c(async()=>{let{data:y}=await h(`/v1/admin/projects/${encodeURIComponent(m)}/keys/rotate`,{method:"POST",body:{kind:f}});r(k=>({...k,[m]:{...k[m],...y}}))})),_=m=>O(`Delete project "${m}", its keys and its whole database? This cannot be undone.`,()=>c(async()=>{await h(`/v1/admin/projects/${encodeURIComponent(m)}`,{method:"DELETE"}),rt(m,null),e.reload()})),l=(e.data??[]).slice(t,t+st);return p`
    <section aria-labelledby="new-project">
      <h2 id="new-project">New project</h2>
      <form class="inline" onSubmit=${d}>
        <${b} id="project-ref"
          label="Ref"><input id="project-ref" name="ref" required pattern="[a-z0-9\\-]{1,40}"
            placeholder="my-app" /><//>
          <${b} id="project-name" label="Name"><input id="project-name" name="name" placeholder="My app" /><//>
          <button type="submit">Create project</button>
        </form>
      </section>
      <${S} error=${o||e.error} />
      <section aria-labelledby="project-list">
        <h2 id="project-list">Projects</h2>
        <${x} caption="Projects" rows=${l} columns=${[{key:"ref",label:"Ref"},{key:"name",label:"Name"},{key:"api_url",label:"API URL"},{key:"created_at",label:"Created"},{key:"actions",label:"Actions",render:m=>p`
                <div class="actions">
                  <a href=${`/console/functions?project=${encodeURIComponent(m.ref)}`}>Open</a>
                  <button type="button" class="secondary" onClick=${()=>i(m.ref)}>Reveal keys</button>
                  <button type="button" class="secondary" onClick=${u(m.ref,"public")}>Rotate public key</button>
                  <button type="button" class="secondary" onClick=${u(m.ref,"secret")}>Rotate secret key</button>
                  <button type="button" class="danger" onClick=${_(m.ref)}>Delete</button>
                </div>
              `}]} />
        <${E} offset=${t} limit=${st} count=${l.length} onChange=${n} />
      </section>
      ${Object.entries(a).map(([m,f])=>p`
          <section class="keys" key=${m} aria-label=${`Keys of ${m}`}>
            <h3>Keys of ${m}</h3>
            <dl>
              <dt>Public key (anon)</dt>
              <dd><code>${f.public_key}</code></dd>
              <dt>Secret key (service_role, servers only)</dt>
              <dd><code>${f.secret_key}</code></dd>
            </dl>
            <button type="button" class="secondary" onClick=${()=>r(y=>{let{[m]:k,...v}=y;return v})}>Hide keys</button>
          </section>
        `)}
  `}var it=20,Ut=`export default {
  fetch(req) {
    console.log("called", req.method, new URL(req.url).pathname);
    return Response.json({ hello: "world" });
  },
};`;function ct(){let e=C(()=>h("/v1/functions").then(u=>u.data),[]),[t,n]=$(0),[o,s]=$(null),[a,r]=$("editor"),c=(u,_="editor")=>{s(u),r(_)},d=(e.data??[]).slice(t,t+it),i=(e.data??[]).find(u=>u.name===o)??null;return p`<div class="split">
  <section aria-labelledby="fn-list">
    <h2 id="fn-list">Functions</h2>
    <button type="button" onClick=${()=>c("")}>New function</button>
    <${S} error=${e.error} />
    <${x} caption="Functions" rows=${d} empty="No functions yet: deploy one" columns=${[{key:"name",label:"Name",render:u=>p`<button type="button" class="link" onClick=${()=>c(u.name)}>${u.name}</button>`},{key:"runtime",label:"Runtime"},{key:"is_active",label:"Active",render:u=>u.is_active?"yes":"no"},{key:"updated_at",label:"Updated"}]} />
    <${E} offset=${t} limit=${it} count=${d.length} onChange=${n} />
  </section>
  ${o!==null&&p`<section aria-labelledby="fn-detail" class="detail">
    <h2 id="fn-detail">${o||"New function"}</h2>
    ${o&&p`<${B} label="Function" current=${a} onChange=${r} tabs=${[["editor","Editor"],["invoke","Invoke"],["logs","Logs"],["stats","Stats"]]} />`}
    ${(a==="editor"||!o)&&p`<${Ft} key=${o} fn=${i} onDeployed=${u=>{e.reload(),c(u,"invoke")}} onDeleted=${()=>{s(null),e.reload()}} />`}
    ${o&&a==="invoke"&&p`<${Bt} name=${o} />`}
    ${o&&a==="logs"&&p`<${Mt} name=${o} />`}
    ${o&&a==="stats"&&p`<${Wt} name=${o} />`}
  </section>`}
  </div>`}function It(e){return Object.entries(e??{}).map(([t,n])=>`${t}=${n}`).join(`
`)}function Ht(e){let t={};for(let n of e.split(`
`)){if(!n.trim())continue;let o=n.indexOf("=");if(o<1)throw new Error(`Environment line "${n}" is not KEY=value`);t[n.slice(0,o).trim()]=n.slice(o+1)}return t}function Ft({fn:e,onDeployed:t,onDeleted:n}){let[o,s]=$(null),[a,r]=$(!1),c=e?.permissions,d=u=>{let _=N(u);r(!0),(async()=>{let l={allow_net:_.allow_net.split(",").map(f=>f.trim()).filter(Boolean),..._.memory_mb?{memory_mb:Number(_.memory_mb)}:{},..._.timeout_secs?{timeout_secs:Number(_.timeout_secs)}:{},..._.cpu_ms?{cpu_ms:Number(_.cpu_ms)}:{}},m={name:_.name,runtime:_.runtime,code:_.code,env_vars:Ht(_.env_vars),permissions:l,is_active:_.is_active==="on"};await h("/v1/functions",{method:"POST",body:m}),s(null),t(_.name)})().catch(s).finally(()=>r(!1))},i=O(`Delete function "${e?.name}"? Its code, logs and stats go with it.`,()=>h(`/v1/functions/${encodeURIComponent(e.name)}`,{method:"DELETE"}).then(n,s));return p`
    <form class="stack" onSubmit=${d} aria-label="Deploy">
      <${b} id="fn-name" label="Name"><input id="fn-name" name="name" required value=${e?.name??""}
          readOnly=${!!e} pattern="[a-z][a-z0-9_\\-]{0,62}" /><//>
        <${b} id="fn-runtime" label="Runtime"><select id="fn-runtime" name="runtime" value=${e?.runtime??"deno"}>
          <option value="deno">deno (TypeScript / JavaScript)</option><option value="wasm">wasm (base64 module)</option>
        </select><//>
        <${b} id="fn-code" label="Code"><textarea id="fn-code" name="code" rows="14" class="code" spellcheck="false"
          required>${e?.code??Ut}</textarea><//>
        <${b} id="fn-env" label="Environment variables" hint="One KEY=value a line; replaces the set">
          <textarea id="fn-env" name="env_vars" rows="3" class="code">${It(e?.env_vars)}</textarea><//>
        <fieldset><legend>Permissions</legend>
          <${b} id="fn-net" label="Allowed hosts (comma-separated)"><input id="fn-net" name="allow_net"
            value=${(c?.allow_net??[]).join(", ")} /><//>
          <div class="row">
            <${b} id="fn-mem" label="Memory (MB)"><input id="fn-mem" name="memory_mb" type="number" min="1"
              value=${c?.memory_mb??""} /><//>
            <${b} id="fn-timeout" label="Timeout (s)"><input id="fn-timeout" name="timeout_secs" type="number" min="1"
              value=${c?.timeout_secs??""} /><//>
            <${b} id="fn-cpu" label="CPU per call (ms)"><input id="fn-cpu" name="cpu_ms" type="number" min="1"
              value=${c?.cpu_ms??""} /><//>
          </div>
        </fieldset>
        <div class="check"><input id="fn-active" name="is_active" type="checkbox" checked=${e?.is_active??!0} />
          <label for="fn-active">Active</label></div>
        <${S} error=${o} />
        <div class="actions">
          <button type="submit" disabled=${a}>${a?"Deploying\u2026":"Deploy"}</button>
          ${e&&p`<button type="button" class="danger" onClick=${i}>Delete function</button>`}
        </div>
      </form>
  `}function Vt(e){let t={};for(let n of e.split(`
`)){if(!n.trim())continue;let o=n.indexOf(":");if(o<1)throw new Error(`Header line "${n}" is not "Name: value"`);t[n.slice(0,o).trim()]=n.slice(o+1).trim()}return t}function Bt({name:e}){let[t,n]=$(null),[o,s]=$(null),[a,r]=$(!1);return p`
    <form class="stack" onSubmit=${d=>{let i=N(d);r(!0),(async()=>{let u=i.body;try{u=i.body.trim()?JSON.parse(i.body):void 0}catch{u=i.body}let _=`/v1/functions/${encodeURIComponent(e)}/logs`,[l]=(await h(`${_}?limit=1`)).data??[],{data:m}=await h(`/v1/functions/${encodeURIComponent(e)}/invoke`,{method:"POST",body:{method:i.method,path:i.path||"/",headers:Vt(i.headers),body:u}}),f=[];for(let y of(await h(`${_}?limit=200`)).data??[]){if(l&&(y.timestamp<l.timestamp||y.timestamp===l.timestamp&&y.message===l.message))break;f.unshift(`${y.level}: ${y.message}`)}s(null),n({...m,logs:[...m.logs,...f]})})().catch(u=>{n(null),s(u)}).finally(()=>r(!1))}} aria-label="Invoke">
      <div class="row">
        <${b} id="inv-method" label="Method"><select id="inv-method" name="method">
            ${["GET","POST","PUT","PATCH","DELETE"].map(d=>p`<option>${d}</option>`)}
          </select><//>
          <${b} id="inv-path" label="Path"><input id="inv-path" name="path" value="/" /><//>
        </div>
        <${b} id="inv-headers" label="Headers" hint="One Name: value a line">
          <textarea id="inv-headers" name="headers" rows="2" class="code"></textarea><//>
        <${b} id="inv-body" label="Body" hint="JSON or text"><textarea id="inv-body" name="body" rows="4"
          class="code"></textarea><//>
        <button type="submit" disabled=${a}>${a?"Invoking\u2026":"Invoke"}</button>
      </form>
      <${S} error=${o} />
      ${t&&p`
          <div class="result" aria-live="polite">
            <p><strong>Status</strong> <span class="status" data-testid="invoke-status">${t.status}</span>
                · <strong>Duration</strong> ${Math.round(t.duration_ms*10)/10} ms</p>
            <h3>Headers</h3>
            <${I} value=${t.headers} label="Response headers" />
            <h3>Body</h3>
            <${I} value=${t.body} label="Response body" />
            <h3>Logs</h3>
            <${I} value=${t.logs.join(`
`)||"(none)"} label="Logs" />
          </div>
        `}
  `}function Mt({name:e}){let[t,n]=$(""),[o,s]=$(0),a=C(()=>h(`/v1/functions/${encodeURIComponent(e)}/logs?limit=1000${t?`&level=${t}`:""}`).then(c=>c.data),[e,t]),r=(a.data??[]).slice(o,o+50);return p`
    <div class="inline">
      <${b} id="log-level" label="Level"><select id="log-level" value=${t}
          onChange=${c=>(s(0),n(c.currentTarget.value))}>
          <option value="">all</option>${["debug","info","warn","error"].map(c=>p`<option>${c}</option>`)}
        </select><//>
        <button type="button" class="secondary" onClick=${a.reload}>Refresh</button>
      </div>
      <${S} error=${a.error} />
      <${x} caption="Logs" rows=${r} empty="No log lines" columns=${[{key:"timestamp",label:"Time"},{key:"level",label:"Level"},{key:"message",label:"Message"}]} />
      <${E} offset=${o} limit=${50} count=${r.length} onChange=${s} />
  `}var Jt=["1h","24h","7d","30d"];function Wt({name:e}){let t=C(()=>Promise.all(Jt.map(o=>h(`/v1/functions/${encodeURIComponent(e)}/stats?window=${o}`))).then(o=>o.map(s=>s.data)),[e]);if(t.error)return p`<${S} error=${t.error} />`;if(!t.data)return p`<p class="muted">Loading…</p>`;let n=t.data[1];return p`
    <div class="charts">
      <${V} title="Latency over the last 24 h" unit=" ms" bars=${[{label:"p50",value:n.p50_ms},{label:"p95",value:n.p95_ms},{label:"average",value:n.avg_ms}]} />
      <${V} title="Calls and failures by window" bars=${t.data.flatMap(o=>[{label:`${o.window} calls`,value:o.count},{label:`${o.window} errors`,value:o.errors+o.timeouts+o.oom,tone:"bad"}])} />
    </div>
    <${x} caption="Stats by window" rows=${t.data} columns=${[{key:"window",label:"Window"},{key:"count",label:"Calls"},{key:"errors",label:"Errors"},{key:"timeouts",label:"Timeouts"},{key:"oom",label:"Out of memory"},{key:"p50_ms",label:"p50 (ms)"},{key:"p95_ms",label:"p95 (ms)"}]} />
    <button type="button" class="secondary" onClick=${t.reload}>Refresh</button>
  `}var ut=25,Kt=["pending","running","completed","failed","dead"];function dt(){let[e,t]=$("jobs"),[n,o]=$(""),[s,a]=$(0),[r,c]=$(null),[d,i]=$(null),[u,_]=$(null),l=e==="dlq"?"/v1/functions/jobs/dlq":"/v1/functions/jobs",m=C(()=>h(l+H({status:e==="dlq"?"":n,limit:ut,offset:s})).then(w=>w.data),[e,n,s]),f=C(()=>r?h(`/v1/functions/jobs/${r}`).then(w=>w.data):Promise.resolve(null),[r]),y=w=>w().then(()=>(i(null),m.reload(),f.reload()),i),k=w=>{let A=N(w);y(async()=>{let L={function_name:A.function_name},G=J(A.payload,"Payload");G!==void 0&&(L.payload=G),A.max_attempts&&(L.max_attempts=Number(A.max_attempts));let{data:W}=await h("/v1/functions/jobs",{method:"POST",body:L});_(`Job ${W.id} enqueued`)})},v=O("Put every dead job back to pending?",()=>y(async()=>{let{data:w}=await h("/v1/functions/jobs/dlq/requeue",{method:"POST"});_(`${w.requeued} job(s) requeued`)})),g=w=>y(()=>h(`/v1/functions/jobs/${w}/retry`,{method:"POST"})),q=m.data??[];return p`
    <details class="card">
      <summary>Enqueue a job</summary>
      <form class="inline" onSubmit=${k}>
        <${b} id="job-fn" label="Function"><input id="job-fn" name="function_name" required /><//>
          <${b} id="job-payload" label="Payload (JSON)"><input id="job-payload" name="payload" /><//>
          <${b} id="job-attempts" label="Max attempts"><input id="job-attempts" name="max_attempts" type="number"
            min="1" max="25" /><//>
          <button type="submit">Enqueue</button>
        </form></details>
      <${B} label="Jobs" current=${e} onChange=${w=>(a(0),t(w))}
        tabs=${[["jobs","All jobs"],["dlq","Dead letters"]]} />
      <div class="inline">
        ${e==="jobs"&&p`<${b} id="job-status" label="Status"><select id="job-status" value=${n}
      onChange=${w=>(a(0),o(w.currentTarget.value))}>
      <option value="">any</option>${Kt.map(w=>p`<option>${w}</option>`)}
    </select><//>`}
        ${e==="dlq"&&p`<button type="button" onClick=${v}>Requeue all dead jobs</button>`}
        <button type="button" class="secondary" onClick=${m.reload}>Refresh</button>
      </div>
      ${u&&p`<p class="note" role="status">${u}</p>`}
      <${S} error=${d||m.error} />
      <${x} caption=${e==="dlq"?"Dead jobs":"Jobs"} rows=${q} empty="No jobs" columns=${[{key:"id",label:"Job",render:w=>p`<button type="button" class="link" onClick=${()=>c(w.id)}>${w.id.slice(0,8)}</button>`},{key:"function_name",label:"Function"},{key:"status",label:"Status",render:w=>p`<span class=${`badge ${w.status}`}>${w.status}</span>`},{key:"attempts",label:"Attempts",render:w=>`${w.attempts}/${w.max_attempts}`},{key:"error",label:"Error"},{key:"created_at",label:"Created"},{key:"retry",label:"Actions",render:w=>w.status==="failed"||w.status==="dead"?p`<button type="button" class="secondary" onClick=${()=>g(w.id)}>Retry</button>`:null}]} />
      <${E} offset=${s} limit=${ut} count=${q.length} onChange=${a} />
      ${f.data&&p`<section class="card" aria-labelledby="job-detail"><h2 id="job-detail">Job ${f.data.id}</h2>
    <${I} value=${f.data} label="Job" />
    <button type="button" class="secondary" onClick=${()=>c(null)}>Close</button></section>`}
  `}var me=25,Gt="select table_schema || '.' || table_name as name from information_schema.tables where table_schema = 'public' order by 1";function mt(){let[e,t]=$("tables");return p`
    <${B} label="Data" current=${e} onChange=${t}
      tabs=${[["tables","Table browser"],["sql","SQL runner"]]} />
      ${e==="tables"?p`<${zt} />`:p`<${Qt} />`}
  `}function _t(e){return(e.length?Object.keys(e[0]):[]).map(n=>({key:n,label:n}))}function zt(){let e=C(()=>h("/v1/sql",{method:"POST",body:{query:Gt}}).then(_=>_.data.map(l=>l.name)),[]),[t,n]=$(""),[o,s]=$(""),[a,r]=$(""),[c,d]=$(0),i=C(async()=>{if(!t)return null;let _=t.replace(/^public\./,""),l=new URLSearchParams(o);l.set("limit",String(me)),l.set("offset",String(c)),a&&l.set("order",a);let m=await h(`/rest/v1/${encodeURIComponent(_)}?${l}`,{headers:{prefer:"count=exact"}});return{rows:m.data,range:m.headers.get("content-range")}},[t,o,a,c]);return p`
    <form class="inline" onSubmit=${_=>{let l=N(_);d(0),n(l.table),s(l.filter),r(l.order)}} aria-label="Browse a table">
      <${b} id="tb-table" label="Table"><select id="tb-table" name="table" required>
          <option value="">choose…</option>${(e.data??[]).map(_=>p`<option>${_}</option>`)}
        </select><//>
        <${b} id="tb-filter" label="Filters" hint="The data API's: id=gt.10&name=like.*a*"><input id="tb-filter"
          name="filter" placeholder="id=gt.10" /><//>
        <${b} id="tb-order" label="Order"><input id="tb-order" name="order" placeholder="id.desc" /><//>
        <button type="submit">Show rows</button>
      </form>
      <${S} error=${e.error||i.error} />
      ${i.data&&p`
          <p class="muted">${i.data.range?`Range ${i.data.range}`:""}</p>
          <${x} caption=${t} rows=${i.data.rows} columns=${_t(i.data.rows)} empty="No rows" />
          <${E} offset=${c} limit=${me} count=${i.data.rows.length} onChange=${d} />
        `}
  `}function Qt(){let[e,t]=$(null),[n,o]=$(null),[s,a]=$(0),r=i=>{let u=N(i),_=performance.now();h("/v1/sql",{method:"POST",body:{query:u.query}}).then(l=>{o(null),a(0),t({rows:l.data,ms:performance.now()-_})},l=>{t(null),o(l)})},c=i=>{(i.ctrlKey||i.metaKey)&&i.key==="Enter"&&i.currentTarget.form.requestSubmit()},d=e?e.rows.slice(s,s+me):[];return p`
    <form class="stack" onSubmit=${r} aria-label="SQL runner">
      <${b} id="sql-query" label="SQL" hint="Runs as the project's owner; Ctrl+Enter runs">
          <textarea id="sql-query" name="query" rows="6" class="code" spellcheck="false" onKeyDown=${c}
            required>select now() as now, current_user as role</textarea><//>
        <button type="submit">Run</button>
      </form>
      <${S} error=${n} />
      ${e&&p`
          <p class="muted" role="status">${e.rows.length} row(s) in ${Math.round(e.ms)} ms</p>
          <${x} caption="Result" rows=${d} columns=${_t(e.rows)} empty="No rows returned" />
          <${E} offset=${s} limit=${me} count=${d.length} onChange=${a} />
        `}
  `}var R=25,Yt=["email","sms","push","webhook"],Xt=["queued","sending","sent","delivered","failed","dead_lettered","suppressed"],Zt=e=>p`<span class=${`badge ${e}`}>${e}</span>`;function pt(){let[e,t]=$("list"),n=[["list","Notifications"],["dlq","Dead letters"],["templates","Templates"],["rules","Rules"],["logs","Provider logs"],["stats","Stats"],["settings","Settings"]],o={list:en,dlq:nn,templates:on,rules:sn,logs:rn,stats:ln,settings:cn}[e];return p`
    <${B} label="Notifications" current=${e} onChange=${t} tabs=${n} />
    <${o} />
  `}function _e({id:e,value:t,onChange:n,any:o=!0,name:s}){return p`<select id=${e} name=${s} value=${t} onChange=${n&&(a=>n(a.currentTarget.value))}>
    ${o&&p`<option value="">any</option>`}${Yt.map(a=>p`<option>${a}</option>`)}
  </select>`}function en(){let[e,t]=$({channel:"",status:"",search:""}),[n,o]=$(0),[s,a]=$(null),r=C(()=>h(`/v1/notifications${H({...e,limit:R,offset:n})}`).then(i=>i.data),[e,n]),c=i=>{o(0),t(N(i))},d=r.data??[];return p`
    <form class="inline" onSubmit=${c} aria-label="Filter notifications">
      <${b} id="n-channel" label="Channel">
        <${_e} id="n-channel" name="channel" />
        <//>
        <${b} id="n-status"
          label="Status"><select id="n-status" name="status"><option value="">any</option>
          ${Xt.map(i=>p`<option>${i}</option>`)}</select><//>
        <${b} id="n-search" label="Search"><input id="n-search" name="search" placeholder="recipient" /><//>
        <button type="submit">Filter</button>
      </form>
      <${S} error=${r.error} />
      <${x} caption="Notifications" rows=${d} empty="No notifications" columns=${[{key:"id",label:"Id",render:i=>p`<button type="button" class="link" onClick=${()=>a(i.id)}>${i.id.slice(0,8)}</button>`},{key:"channel",label:"Channel"},{key:"recipient",label:"Recipient"},{key:"status",label:"Status",render:i=>Zt(i.status)},{key:"attempts",label:"Attempts"},{key:"created_at",label:"Created"}]} />
      <${E} offset=${n} limit=${R} count=${d.length} onChange=${o} />
      ${s&&p`<${tn} id=${s} onClose=${()=>a(null)} />`}
  `}function tn({id:e,onClose:t}){let n=C(()=>Promise.all([h(`/v1/notifications/${e}`),h(`/v1/notifications/${e}/attempts`)]).then(([r,c])=>({notification:r.data,attempts:c.data})),[e]),[o,s]=$(null),a=()=>h(`/v1/notifications/${e}/retry`,{method:"POST"}).then(n.reload,s);return p`<section class="card" aria-labelledby="n-detail"><h2 id="n-detail">Notification ${e}</h2>
    <${S} error=${n.error||o} />
    ${n.data&&p`
      <${I} value=${n.data.notification} label="Notification" />
      <h3>Attempts and provider answers</h3>
      <${x} caption="Attempts" rows=${n.data.attempts} empty="No attempts yet" columns=${Object.keys(n.data.attempts[0]??{attempt:1}).map(r=>({key:r,label:r}))} />
    `}
    <div class="actions"><button type="button" class="secondary" onClick=${a}>Retry now</button>
    <button type="button" class="secondary" onClick=${t}>Close</button></div>
  </section>`}function nn(){let[e,t]=$(""),[n,o]=$(0),[s,a]=$(null),r=C(()=>h(`/v1/notifications/dead-letters${H({channel:e,limit:R,offset:n})}`).then(i=>i.data),[e,n]),c=i=>h(`/v1/notifications/dead-letters/${i}/retry`,{method:"POST"}).then(r.reload,a),d=r.data??[];return p`
    <div class="inline">
      <${b} id="dl-channel" label="Channel">
        <${_e} id="dl-channel" value=${e} onChange=${i=>(o(0),t(i))} />
        <//>
        </div>
        <${S} error=${r.error||s} />
        <${x} caption="Dead letters" rows=${d} empty="The dead-letter queue is empty"
          columns=${[{key:"id",label:"Id",render:i=>i.id.slice(0,8)},{key:"channel",label:"Channel"},{key:"recipient",label:"Recipient"},{key:"last_error",label:"Last error"},{key:"updated_at",label:"Dead since"},{key:"retry",label:"Actions",render:i=>p`<button type="button" class="secondary" onClick=${()=>c(i.id)}>Retry</button>`}]} />
        <${E} offset=${n} limit=${R} count=${d.length} onChange=${o} />
  `}function on(){let e=C(()=>h("/v1/notifications/templates").then(u=>u.data),[]),[t,n]=$(null),[o,s]=$(0),[a,r]=$(null),c=u=>{let _=N(u);h("/v1/notifications/templates",{method:"POST",body:{name:_.name,channel:_.channel,subject:_.subject||null,body:_.body}}).then(l=>{r(null),e.reload(),n(l.data.id)},r)},d=(e.data??[]).slice(o,o+R),i=(e.data??[]).find(u=>u.id===t);return p`
    <details class="card">
      <summary>New template</summary>
      <form class="stack" onSubmit=${c}>
        <div class="row">
          <${b} id="t-name" label="Name"><input id="t-name" name="name" required /><//>
            <${b} id="t-channel" label="Channel"><${_e} id="t-channel" name="channel" any=${!1} /><//>
          </div>
          <${b} id="t-subject" label="Subject"><input id="t-subject" name="subject" /><//>
          <${b} id="t-body" label="Body" hint="LiquidJS: Hello {{ user.name }}"><textarea id="t-body" name="body"
            rows="4" class="code" required></textarea><//>
          <button type="submit">Create template</button>
        </form></details>
      <${S} error=${e.error||a} />
      <${x} caption="Templates" rows=${d} empty="No templates" columns=${[{key:"name",label:"Name",render:u=>p`<button type="button" class="link" onClick=${()=>n(u.id)}>${u.name}</button>`},{key:"channel",label:"Channel"},{key:"subject",label:"Subject"},{key:"updated_at",label:"Updated"}]} />
      <${E} offset=${o} limit=${R} count=${d.length} onChange=${s} />
      ${i&&p`
        <${an} key=${i.id} template=${i} onSaved=${e.reload}
          onDeleted=${()=>(n(null),e.reload())} />
      `}
  `}function an({template:e,onSaved:t,onDeleted:n}){let[o,s]=$("{}"),[a,r]=$(null),[c,d]=$(null),[i,u]=$(0);ue(()=>{let m=setTimeout(()=>{let f;try{f=J(o,"Variables")??{}}catch(y){d(y);return}h(`/v1/notifications/templates/${e.id}/preview`,{method:"POST",body:{variables:f}}).then(y=>(d(null),r(y.data)),y=>(r(null),d(y)))},250);return()=>clearTimeout(m)},[o,i]);let _=m=>{let f=N(m);h(`/v1/notifications/templates/${e.id}`,{method:"PATCH",body:{name:f.name,subject:f.subject||null,body:f.body}}).then(()=>(u(y=>y+1),t()),d)},l=O(`Delete template "${e.name}"?`,()=>h(`/v1/notifications/templates/${e.id}`,{method:"DELETE"}).then(n,d));return p`
    <section class="card" aria-labelledby="t-edit">
      <h2 id="t-edit">Template ${e.name}</h2>
      <div class="split">
        <form class="stack" onSubmit=${_} aria-label="Edit template">
          <${b} id="te-name" label="Name"><input id="te-name" name="name" value=${e.name} /><//>
          <${b} id="te-subject" label="Subject"><input id="te-subject" name="subject" value=${e.subject??""} /><//>
          <${b} id="te-body" label="Body"><textarea id="te-body" name="body" rows="6" class="code">${e.body}</textarea><//>
          <div class="actions"><button type="submit">Save</button>
            <button type="button" class="danger" onClick=${l}>Delete template</button></div>
        </form>
        <div>
          <${b} id="te-vars" label="Variables (JSON)" hint="The preview follows as you type">
            <textarea id="te-vars" rows="4" class="code" value=${o}
              onInput=${m=>s(m.currentTarget.value)}></textarea><//>
          <${S} error=${c} />
          ${a&&p`<div class="preview" aria-live="polite" data-testid="template-preview">
        ${a.subject!=null&&p`<p><strong>Subject:</strong> ${a.subject}</p>`}
        <pre>${a.body}</pre></div>`}
        </div>
      </div></section>
  `}function sn(){let e=C(()=>h("/v1/notifications/rules").then(u=>u.data),[]),[t,n]=$(0),[o,s]=$(null),a=()=>(s(null),e.reload()),r=u=>{let _=N(u),l=u.currentTarget;h("/v1/notifications/rules",{method:"POST",body:{name:_.name,trigger_type:_.trigger_type,condition:_.condition||"true",channel:_.channel,recipient_expr:_.recipient_expr,template_id:_.template_id||null,body:_.body||null}}).then(()=>(l.reset(),a()),s)},c=u=>h(`/v1/notifications/rules/${u.id}`,{method:"PATCH",body:{enabled:!u.enabled}}).then(a,s),d=u=>O(`Delete rule "${u.name}"?`,()=>h(`/v1/notifications/rules/${u.id}`,{method:"DELETE"}).then(a,s)),i=(e.data??[]).slice(t,t+R);return p`
    <details class="card">
      <summary>New rule</summary>
      <form class="stack" onSubmit=${r}>
        <div class="row">
          <${b} id="r-name" label="Name"><input id="r-name" name="name" required /><//>
            <${b} id="r-trigger" label="Event type"><input id="r-trigger" name="trigger_type" required
              placeholder="user.signup" /><//>
            <${b} id="r-channel" label="Channel"><${_e} id="r-channel" name="channel" any=${!1} /><//>
          </div>
          <${b} id="r-cond" label="Condition (CEL over event)"><input id="r-cond" name="condition" placeholder="true" /><//>
          <${b} id="r-recipient" label="Recipient (CEL)"><input id="r-recipient" name="recipient_expr" required
            placeholder="event.data.email" /><//>
          <${b} id="r-template" label="Template id"><input id="r-template" name="template_id" /><//>
          <${b} id="r-body" label="Body (without a template)"><textarea id="r-body" name="body" rows="2"></textarea><//>
          <button type="submit">Create rule</button>
        </form></details>
      <${S} error=${e.error||o} />
      <${x} caption="Rules" rows=${i} empty="No rules" columns=${[{key:"name",label:"Name"},{key:"trigger_type",label:"Event type"},{key:"channel",label:"Channel"},{key:"condition",label:"Condition"},{key:"enabled",label:"Enabled",render:u=>u.enabled?"yes":"no"},{key:"actions",label:"Actions",render:u=>p`<div class="actions">
      <button type="button" class="secondary" onClick=${()=>c(u)}>${u.enabled?"Disable":"Enable"}</button>
      <button type="button" class="danger" onClick=${d(u)}>Delete</button></div>`}]} />
      <${E} offset=${t} limit=${R} count=${i.length} onChange=${n} />
  `}function rn(){let[e,t]=$(0),[n,o]=$(""),s=C(()=>h(`/v1/notifications/providers/logs${H({status:n,limit:R,offset:e})}`).then(r=>r.data),[n,e]),a=s.data??[];return p`
    <div class="inline">
      <${b} id="pl-status" label="Outcome"><select id="pl-status" value=${n}
        onChange=${r=>(t(0),o(r.currentTarget.value))}><option value="">any</option>
        <option>success</option><option>error</option></select><//></div>
      <${S} error=${s.error} />
      <${x} caption="Provider logs" rows=${a} empty="No provider calls yet"
        columns=${Object.keys(a[0]??{channel:1}).map(r=>({key:r,label:r}))} />
      <${E} offset=${e} limit=${R} count=${a.length} onChange=${t} />
  `}function ln(){let[e,t]=$("24h"),n=C(()=>h(`/v1/notifications/stats?window=${e}`).then(s=>s.data),[e]),o=n.data;return p`
    <div class="inline">
      <${b} id="ns-window" label="Window"><select id="ns-window" value=${e}
        onChange=${s=>t(s.currentTarget.value)}>${["1h","24h","7d","30d"].map(s=>p`<option>${s}</option>`)}</select><//></div>
      <${S} error=${n.error} />
      ${o&&p`
        <p>${o.total} notification(s); success rate ${o.success_rate===null?"\u2014":`${Math.round(o.success_rate*100)}%`}; queued→sent p50 ${o.queued_to_sent_ms.p50??"\u2014"} ms, p95 ${o.queued_to_sent_ms.p95??"\u2014"} ms</p>
        <div class="charts">
          <${V} title="By status" bars=${Object.entries(o.by_status).map(([s,a])=>({label:s,value:a,tone:/failed|dead/.test(s)?"bad":""}))} />
          <${V} title="By channel" bars=${Object.entries(o.by_channel).map(([s,a])=>({label:s,value:a.total}))} />
        </div>
      `}
  `}function cn(){let e=C(()=>h("/v1/notifications/settings").then(r=>r.data),[]),[t,n]=$(null),[o,s]=$(null),a=r=>{let c=N(r),d=r.currentTarget;(async()=>{let i=J(c.patch,"Settings")??{},u=(_,l,m)=>{m&&(i[_]={...i[_]??{},[l]:m})};u("email","pass",c.email_pass),u("sms","auth_token",c.sms_token),u("webhook","secret",c.webhook_secret),await h("/v1/notifications/settings",{method:"PATCH",body:i}),d.reset(),n(null),s("Settings saved"),e.reload()})().catch(n)};return p`
    <div class="split">
      <section><h2>Current settings</h2>
        <${S} error=${e.error} />${e.data&&p`<${I} value=${e.data} label="Settings" />`}
      </section>
      <form class="stack" onSubmit=${a} aria-label="Change settings">
        <h2>Change</h2>
        <${b} id="s-patch" label="Changes (JSON)" hint='e.g. {"retry": {"max_attempts": 5}}'>
          <textarea id="s-patch" name="patch" rows="6" class="code"></textarea>
          <//>
          <${b} id="s-email-pass"
            label="SMTP password (write-only)"><input id="s-email-pass" name="email_pass"
          type="password" autocomplete="new-password" /><//>
        <${b} id="s-sms-token" label="SMS auth token (write-only)"><input id="s-sms-token" name="sms_token"
          type="password" autocomplete="new-password" /><//>
        <${b} id="s-webhook" label="Webhook signing secret (write-only)"><input id="s-webhook" name="webhook_secret"
          type="password" autocomplete="new-password" placeholder="whsec_…" /><//>
        <${S} error=${t} />${o&&p`<p class="note" role="status">${o}</p>`}
        <button type="submit">Save settings</button>
      </form></div>
  `}var ft=25;function bt(){let e=C(()=>h("/v1/functions/cron").then(_=>_.data),[]),[t,n]=$(0),[o,s]=$(null),a=()=>(s(null),e.reload()),r=_=>h("/v1/functions/cron",{method:"POST",body:_}).then(a,s),c=_=>{let l=N(_);try{r({name:l.name,schedule:l.schedule,function_name:l.function_name,payload:J(l.payload,"Payload")})}catch(m){s(m)}},d=({name:_,schedule:l,function_name:m,payload:f})=>({name:_,schedule:l,function_name:m,payload:f}),i=_=>O(`Delete cron entry "${_.name}"?`,()=>h(`/v1/functions/cron/${encodeURIComponent(_.name)}`,{method:"DELETE"}).then(a,s)),u=(e.data??[]).slice(t,t+ft);return p`
    <form class="inline" onSubmit=${c} aria-label="New cron entry">
      <${b} id="c-name" label="Name"><input id="c-name" name="name" required /><//>
        <${b} id="c-schedule" label="Schedule (6 fields, seconds first, UTC)"><input id="c-schedule" name="schedule"
          required placeholder="0 */5 * * * *" /><//>
        <${b} id="c-fn" label="Function"><input id="c-fn" name="function_name" required /><//>
        <${b} id="c-payload" label="Payload (JSON)"><input id="c-payload" name="payload" /><//>
        <button type="submit">Save entry</button>
      </form>
      <${S} error=${e.error||o} />
      <${x} caption="Cron entries" rows=${u} empty="No cron entries" columns=${[{key:"name",label:"Name"},{key:"schedule",label:"Schedule"},{key:"function_name",label:"Function"},{key:"is_active",label:"Active",render:_=>_.is_active?"yes":"paused"},{key:"next_run",label:"Next run"},{key:"last_run",label:"Last run"},{key:"actions",label:"Actions",render:_=>p`<div class="actions">
        <button type="button" class="secondary" onClick=${()=>r({...d(_),is_active:!_.is_active})}>${_.is_active?"Pause":"Resume"}</button>
        <button type="button" class="danger" onClick=${i(_)}>Delete</button></div>`}]} />
      <${E} offset=${t} limit=${ft} count=${u.length} onChange=${n} />
  `}var pe=25,un=["invocations","errors","error_rate","timeouts","duration_p95_ms","duration_avg_ms","jobs_failed","jobs_dead","dlq_depth"],dn=["gt","gte","lt","lte","eq"],mn=["email","sms","push","webhook"],Te=e=>e.map(t=>p`<option>${t}</option>`);function $t(){let[e,t]=$(0),[n,o]=$(0),[s,a]=$(null),r=C(()=>h(`/v1/functions/alerts${H({limit:pe,offset:e})}`).then(f=>f.data),[e]),c=C(()=>h(`/v1/functions/alerts/events${H({limit:pe,offset:n})}`).then(f=>f.data),[n]),d=()=>(a(null),r.reload(),c.reload()),i=f=>{let y=N(f),k={name:y.name,metric:y.metric,condition:y.condition,threshold:Number(y.threshold),channel:y.channel,destination:y.destination,...y.function_name?{function_name:y.function_name}:{},...y.window_secs?{window_secs:Number(y.window_secs)}:{}};h("/v1/functions/alerts",{method:"POST",body:k}).then(d,a)},u=f=>h(`/v1/functions/alerts/${f.id}`,{method:"PATCH",body:{enabled:!f.enabled}}).then(d,a),_=f=>O(`Delete alert "${f.name}"?`,()=>h(`/v1/functions/alerts/${f.id}`,{method:"DELETE"}).then(d,a)),l=r.data??[],m=c.data??[];return p`
    <details class="card">
      <summary>New alert</summary>
      <form class="inline" onSubmit=${i}>
        <${b} id="a-name" label="Name"><input id="a-name" name="name" required /><//>
          <${b} id="a-metric" label="Metric"><select id="a-metric" name="metric">${Te(un)}</select><//>
          <${b} id="a-cond" label="Condition"><select id="a-cond" name="condition">${Te(dn)}</select><//>
          <${b} id="a-threshold" label="Threshold"><input id="a-threshold" name="threshold" type="number" step="any"
            required /><//>
          <${b} id="a-channel" label="Channel"><select id="a-channel" name="channel">${Te(mn)}</select><//>
          <${b} id="a-dest" label="Destination"><input id="a-dest" name="destination" required /><//>
          <${b} id="a-fn" label="Function (empty: whole project)"><input id="a-fn" name="function_name" /><//>
          <${b} id="a-window" label="Window (s)"><input id="a-window" name="window_secs" type="number" min="60" /><//>
          <button type="submit">Create alert</button>
        </form></details>
      <${S} error=${r.error||s} />
      <${x} caption="Alerts" rows=${l} empty="No alerts" columns=${[{key:"name",label:"Name"},{key:"rule",label:"Rule",render:f=>`${f.metric} ${f.condition} ${f.threshold}`},{key:"function_name",label:"Function"},{key:"state",label:"State",render:f=>p`<span class=${`badge ${f.state}`}>${f.state}</span>`},{key:"last_value",label:"Last value"},{key:"enabled",label:"Enabled",render:f=>f.enabled?"yes":"no"},{key:"actions",label:"Actions",render:f=>p`<div class="actions">
        <button type="button" class="secondary" onClick=${()=>u(f)}>${f.enabled?"Disable":"Enable"}</button>
        <button type="button" class="danger" onClick=${_(f)}>Delete</button></div>`}]} />
      <${E} offset=${e} limit=${pe} count=${l.length} onChange=${t} label="Alert pages" />
      <h2>Events</h2>
      <${S} error=${c.error} />
      <${x} caption="Alert events" rows=${m} empty="No events yet" columns=${[{key:"created_at",label:"Time"},{key:"alert_id",label:"Alert",render:f=>l.find(y=>y.id===f.alert_id)?.name??f.alert_id},{key:"status",label:"Status"},{key:"value",label:"Value"},{key:"threshold",label:"Threshold"}]} />
      <${E} offset=${n} limit=${pe} count=${m.length} onChange=${o}
        label="Event pages" />
  `}var ht=25,_n="select id, email, user_metadata, created_at, updated_at from auth.users where $1 = '' or email ilike '%' || $1 || '%' order by created_at desc limit $2 offset $3";function yt(){let[e,t]=$(""),[n,o]=$(0),s=C(()=>h("/v1/sql",{method:"POST",body:{query:_n,params:[e,ht,n]}}).then(r=>r.data),[e,n]),a=s.data??[];return p`
    <form class="inline" onSubmit=${r=>(o(0),t(N(r).search))}
      aria-label="Search users">
      <${b} id="u-search" label="Email contains"><input id="u-search" name="search" /><//>
        <button type="submit">Search</button>
      </form>
      <${S} error=${s.error} />
      <${x} caption="Users" rows=${a} empty="No users" columns=${[{key:"email",label:"Email"},{key:"id",label:"Id"},{key:"user_metadata",label:"Metadata"},{key:"created_at",label:"Signed up"}]} />
      <${E} offset=${n} limit=${ht} count=${a.length} onChange=${o} />
  `}var vt=25;function gt(){let e=C(()=>h("/v1/ai/namespaces").then(v=>v.data),[]),t=C(()=>h("/v1/ai/usage?days=30").then(v=>v.data),[]),[n,o]=$(0),[s,a]=$(null),[r,c]=$(null),[d,i]=$(null),u=v=>{let g=N(v),q=v.currentTarget;h("/v1/ai/rag/ingest",{method:"POST",body:{namespace:g.namespace,document:{...g.id?{id:g.id}:{},text:g.text}}}).then(w=>{a(null),c(`Ingested: ${JSON.stringify(w.data)}`),q.reset(),e.reload()},a)},_=v=>{let g=N(v);h("/v1/ai/search",{method:"POST",body:{namespace:g.namespace,query:g.query}}).then(q=>(a(null),i(q.data)),a)},l=Array.isArray(t.data)?t.data:t.data?.rows??[],m=l.reduce((v,g)=>v+Number(g.requests??0),0),f=l.reduce((v,g)=>v+Number(g.cache_hits??0),0),k=(Array.isArray(e.data)?e.data:[]).slice(n,n+vt).map(v=>typeof v=="string"?{name:v}:v);return p`
    <div class="charts">
      <${V} title=${`Cache hit ratio, 30 days: ${m?Math.round(f/m*100):0}%`}
        bars=${[{label:"requests",value:m},{label:"cache hits",value:f,tone:"good"}]} />
    </div>
    <${S} error=${t.error||e.error||s} />
    <h2>Namespaces</h2>
    <${x} caption="Namespaces" rows=${k} empty="No namespaces: ingest a document"
      columns=${Object.keys(k[0]??{name:1}).map(v=>({key:v,label:v}))} />
    <${E} offset=${n} limit=${vt} count=${k.length} onChange=${o} />
    <div class="split">
      <form class="stack" onSubmit=${u} aria-label="Ingest a document">
        <h2>Ingest a document</h2>
        <${b} id="ai-ns" label="Namespace"><input id="ai-ns" name="namespace" required /><//>
          <${b} id="ai-id" label="Document id (optional)"><input id="ai-id" name="id" /><//>
          <${b} id="ai-text" label="Text"><textarea id="ai-text" name="text" rows="5" required></textarea><//>
          <button type="submit">Ingest</button>
          ${r&&p`<p class="note" role="status">${r}</p>`}
        </form>
        <form class="stack" onSubmit=${_} aria-label="Search"><h2>Search</h2>
          <${b} id="ai-sns" label="Namespace"><input id="ai-sns" name="namespace" required /><//>
          <${b} id="ai-q" label="Query"><input id="ai-q" name="query" type="search" required /><//>
          <button type="submit">Search</button>
          ${d&&p`<${x} caption="Results" rows=${d} empty="No match" columns=${[{key:"score",label:"Score",render:v=>Math.round(v.score*1e3)/1e3},{key:"document_id",label:"Document"},{key:"text",label:"Text"}]} />`}
        </form>
      </div>
  `}var pn={projects:lt,functions:ct,jobs:dt,data:mt,notifications:pt,cron:bt,alerts:$t,users:yt,ai:gt},Y=document.getElementById("app");if(Y){let e=pn[Y.dataset.view],t=Y.querySelector("h1")?.textContent??"";Y.textContent="",Be(p`<h1>${t}</h1>${e?p`<${e} />`:p`<p>Not built yet</p>`}`,Y)}var wt=document.getElementById("project-select");wt?.addEventListener("change",()=>wt.form?.requestSubmit());
