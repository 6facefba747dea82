var ee,g,Se,ut,L,ge,Ce,Te,ce,G,W,Ee,de,ue,_e,_t,Y={},X=[],dt=/acit|ex(?:s|g|n|p|$)|rph|grid|ows|mnc|ntw|ine[ch]|zoo|^ord|itera/i,te=Array.isArray;function U(e,t){for(var n in t)e[n]=t[n];return e}function pe(e){e&&e.parentNode&&e.parentNode.removeChild(e)}function me(e,t,n){var o,s,r,l={};for(r in t)r=="key"?o=t[r]:r=="ref"?s=t[r]:l[r]=t[r];if(arguments.length>2&&(l.children=arguments.length>3?ee.call(arguments,2):n),typeof e=="function"&&e.defaultProps!=null)for(r in e.defaultProps)l[r]===void 0&&(l[r]=e.defaultProps[r]);return z(e,l,o,s,null)}function z(e,t,n,o,s){var r={type:e,props:t,key:n,ref:o,__k:null,__:null,__b:0,__e:null,__c:null,constructor:void 0,__v:s??++Se,__i:-1,__u:0};return s==null&&g.vnode!=null&&g.vnode(r),r}function ne(e){return e.children}function Q(e,t){this.props=e,this.context=t}function A(e,t){if(t==null)return e.__?A(e.__,e.__i+1):null;for(var n;t<e.__k.length;t++)if((n=e.__k[t])!=null&&n.__e!=null)return n.__e;return typeof e.type=="function"?A(e):null}function pt(e){if(e.__P&&e.__d){var t=e.__v,n=t.__e,o=[],s=[],r=U({},t);r.__v=t.__v+1,g.vnode&&g.vnode(r),fe(e.__P,r,t,e.__n,e.__P.namespaceURI,32&t.__u?[n]:null,o,n??A(t),!!(32&t.__u),s),r.__v=t.__v,r.__.__k[r.__i]=r,Re(o,r,s),t.__e=t.__=null,r.__e!=n&&je(r)}}function je(e){if((e=e.__)!=null&&e.__c!=null)return e.__e=e.__c.base=null,e.__k.some(function(t){if(t!=null&&t.__e!=null)return e.__e=e.__c.base=t.__e}),je(e)}function we(e){(!e.__d&&(e.__d=!0)&&L.push(e)&&!Z.__r++||ge!=g.debounceRendering)&&((ge=g.debounceRendering)||Ce)(Z)}function Z(){try{for(var e,t=1;L.length;)L.length>t&&L.sort(Te),e=L.shift(),t=L.length,pt(e)}finally{L.length=Z.__r=0}}function Pe(e,t,n,o,s,r,l,c,u,i,d){var p,a,_,f,w,v,k=o&&o.__k||X,y=t.length;for(u=mt(n,t,k,u,y),p=0;p<y;p++)(_=n.__k[p])!=null&&(a=_.__i!=-1&&k[_.__i]||Y,_.__i=p,v=fe(e,_,a,s,r,l,c,u,i,d),f=_.__e,_.ref&&a.ref!=_.ref&&(a.ref&&be(a.ref,null,_),d.push(_.ref,_.__c||f,_)),w==null&&f!=null&&(w=f),4&_.__u?(u=Ne(_,u,e),a.__e&&(a.__e=null)):typeof _.type=="function"&&v!==void 0?u=v:f&&(u=f.nextSibling),_.__u&=-7);return n.__e=w,u}function mt(e,t,n,o,s){var r,l,c,u,i,d=n.length,p=d,a=0;for(e.__k=new Array(s),r=0;r<s;r++)(l=t[r])!=null&&typeof l!="boolean"&&typeof l!="function"?(typeof l=="string"||typeof l=="number"||typeof l=="bigint"||l.constructor==String?l=e.__k[r]=z(null,l,null,null,null):te(l)?l=e.__k[r]=z(ne,{children:l},null,null,null):l.constructor===void 0&&l.__b>0?l=e.__k[r]=z(l.type,l.props,l.key,l.ref?l.ref:null,l.__v):e.__k[r]=l,u=r+a,l.__=e,l.__b=e.__b+1,c=null,(i=l.__i=ft(l,n,u,p))!=-1&&(p--,(c=n[i])&&(c.__u|=2)),c==null||c.__v==null?(i==-1&&(s>d?a--:s<d&&a++),typeof l.type!="function"&&(l.__u|=4)):i!=u&&(i==u-1?a--:i==u+1?a++:(i>u?a--:a++,l.__u|=4))):e.__k[r]=null;if(p)for(r=0;r<d;r++)(c=n[r])!=null&&(2&c.__u)==0&&(c.__e==o&&(o=A(c)),De(c,c));return o}function Ne(e,t,n){var o,s;if(typeof e.type=="function"){for(o=e.__k,s=0;o&&s<o.length;s++)o[s]&&(o[s].__=e,t=Ne(o[s],t,n));return t}e.__e!=t&&(t&&e.type&&!t.parentNode&&(t=A(e)),t=n.insertBefore(e.__e,t||null));do t=t&&t.nextSibling;while(t!=null&&t.nodeType==8);return t}function ft(e,t,n,o){var s,r,l,c=e.key,u=e.type,i=t[n],d=i!=null&&(2&i.__u)==0;if(i===null&&c==null||d&&c==i.key&&u==i.type)return n;if(o>(d?1:0)){for(s=n-1,r=n+1;s>=0||r<t.length;)if((i=t[l=s>=0?s--:r++])!=null&&(2&i.__u)==0&&c==i.key&&u==i.type)return l}return-1}function ke(e,t,n){t[0]=="-"?e.setProperty(t,n??""):e[t]=n==null?"":typeof n!="number"||dt.test(t)?n:n+"px"}function K(e,t,n,o,s){var r,l;e:if(t=="style")if(typeof n=="string")e.style.cssText=n;else{if(typeof o=="string"&&(e.style.cssText=o=""),o)for(t in o)n&&t in n||ke(e.style,t,"");if(n)for(t in n)o&&n[t]==o[t]||ke(e.style,t,n[t])}else if(t[0]=="o"&&t[1]=="n")r=t!=(t=t.replace(Ee,"$1")),l=t.toLowerCase(),t=l in e||t=="onFocusOut"||t=="onFocusIn"?l.slice(2):t.slice(2),e.l||(e.l={}),e.l[t+r]=n,n?o?n[W]=o[W]:(n[W]=de,e.addEventListener(t,r?_e:ue,r)):e.removeEventListener(t,r?_e:ue,r);else{if(s=="http://www.w3.org/2000/svg")t=t.replace(/xlink(H|:h)/,"h").replace(/sName$/,"s");else if(t!="width"&&t!="height"&&t!="href"&&t!="list"&&t!="form"&&t!="tabIndex"&&t!="download"&&t!="rowSpan"&&t!="colSpan"&&t!="role"&&t!="popover"&&t in e)try{e[t]=n??"";break e}catch{}typeof n=="function"||(n==null||n===!1&&t[4]!="-"?e.removeAttribute(t):e.setAttribute(t,t=="popover"&&n==1?"":n))}}function xe(e){return function(t){if(this.l){var n=this.l[t.type+e];if(t[G]==null)t[G]=de++;else if(t[G]<n[W])return;return n(g.event?g.event(t):t)}}}function fe(e,t,n,o,s,r,l,c,u,i){var d,p,a,_,f,w,v,k,y,T,b,j,D,J,I,ie,q=t.type;if(t.constructor!==void 0)return null;128&n.__u&&(u=!!(32&n.__u),r=[c=t.__e=n.__e]),(d=g.__b)&&d(t);e:if(typeof q=="function"){p=l.length;try{if(y=t.props,T=q.prototype&&q.prototype.render,b=(d=q.contextType)&&o[d.__c],j=d?b?b.props.value:d.__:o,n.__c?k=(a=t.__c=n.__c).__=a.__E:(T?t.__c=a=new q(y,j):(t.__c=a=new Q(y,j),a.constructor=q,a.render=ht),b&&b.sub(a),a.state||(a.state={}),a.__n=o,_=a.__d=!0,a.__h=[],a._sb=[]),T&&a.__s==null&&(a.__s=a.state),T&&q.getDerivedStateFromProps!=null&&(a.__s==a.state&&(a.__s=U({},a.__s)),U(a.__s,q.getDerivedStateFromProps(y,a.__s))),f=a.props,w=a.state,a.__v=t,_)T&&q.getDerivedStateFromProps==null&&a.componentWillMount!=null&&a.componentWillMount(),T&&a.componentDidMount!=null&&a.__h.push(a.componentDidMount);else{if(T&&q.getDerivedStateFromProps==null&&y!==f&&a.componentWillReceiveProps!=null&&a.componentWillReceiveProps(y,j),t.__v==n.__v||!a.__e&&a.shouldComponentUpdate!=null&&a.shouldComponentUpdate(y,a.__s,j)===!1){t.__v!=n.__v&&(a.props=y,a.state=a.__s,a.__d=!1),t.__e=n.__e,t.__k=n.__k,t.__k.some(function(F){F&&(F.__=t)}),X.push.apply(a.__h,a._sb),a._sb=[],a.__h.length&&l.push(a),c=A(n);break e}a.componentWillUpdate!=null&&a.componentWillUpdate(y,a.__s,j),T&&a.componentDidUpdate!=null&&a.__h.push(function(){a.componentDidUpdate(f,w,v)})}if(a.context=j,a.props=y,a.__P=e,a.__e=!1,D=g.__r,J=0,T)a.state=a.__s,a.__d=!1,D&&D(t),d=a.render(a.props,a.state,a.context),X.push.apply(a.__h,a._sb),a._sb=[];else do a.__d=!1,D&&D(t),d=a.render(a.props,a.state,a.context),a.state=a.__s;while(a.__d&&++J<25);a.state=a.__s,a.getChildContext!=null&&(o=U(U({},o),a.getChildContext())),T&&!_&&a.getSnapshotBeforeUpdate!=null&&(v=a.getSnapshotBeforeUpdate(f,w)),I=d!=null&&d.type===ne&&d.key==null?Oe(d.props.children):d,c=Pe(e,te(I)?I:[I],t,n,o,s,r,l,c,u,i),a.base=t.__e,t.__u&=-161,a.__h.length&&l.push(a),k&&(a.__E=a.__=null)}catch(F){if(l.length=p,t.__v=null,u||r!=null){if(F.then){for(t.__u|=u?160:128;c&&c.nodeType==8&&c.nextSibling;)c=c.nextSibling;r!=null&&(r[r.indexOf(c)]=null),t.__e=c}else if(r!=null)for(ie=r.length;ie--;)pe(r[ie])}else t.__e=n.__e;t.__k==null&&(t.__k=n.__k||[]),F.then||qe(t),g.__e(F,t,n)}}else r==null&&t.__v==n.__v?(t.__k=n.__k,t.__e=n.__e):c=t.__e=bt(n.__e,t,n,o,s,r,l,u,i);return(d=g.diffed)&&d(t),128&t.__u?void 0:c}function qe(e){e&&(e.__c&&(e.__c.__e=!0),e.__k&&e.__k.some(qe))}function Re(e,t,n){for(var o=0;o<n.length;o++)be(n[o],n[++o],n[++o]);g.__c&&g.__c(t,e),e.some(function(s){try{e=s.__h,s.__h=[],e.some(function(r){r.call(s)})}catch(r){g.__e(r,s.__v)}})}function Oe(e){return typeof e!="object"||e==null||e.__b>0?e:te(e)?e.map(Oe):e.constructor!==void 0?null:U({},e)}function bt(e,t,n,o,s,r,l,c,u){var i,d,p,a,_,f,w,v=n.props||Y,k=t.props,y=t.type;if(y=="svg"?s="http://www.w3.org/2000/svg":y=="math"?s="http://www.w3.org/1998/Math/MathML":s||(s="http://www.w3.org/1999/xhtml"),r!=null){for(i=0;i<r.length;i++)if((_=r[i])&&"setAttribute"in _==!!y&&(y?_.localName==y:_.nodeType==3)){e=_,r[i]=null;break}}if(e==null){if(y==null)return document.createTextNode(k);e=document.createElementNS(s,y,k.is&&k),c&&(g.__m&&g.__m(t,r),c=!1),r=null}if(y==null)v===k||c&&e.data==k||(e.data=k);else{if(r=y=="textarea"&&k.defaultValue!=null?null:r&&ee.call(e.childNodes),!c&&r!=null)for(v={},i=0;i<e.attributes.length;i++)v[(_=e.attributes[i]).name]=_.value;for(i in v)_=v[i],i=="dangerouslySetInnerHTML"?p=_:i=="children"||i in k||i=="value"&&"defaultValue"in k||i=="checked"&&"defaultChecked"in k||K(e,i,null,_,s);for(i in k)_=k[i],i=="children"?a=_:i=="dangerouslySetInnerHTML"?d=_:i=="value"?f=_:i=="checked"?w=_:c&&typeof _!="function"||v[i]===_||K(e,i,_,v[i],s);if(d)c||p&&(d.__html==p.__html||d.__html==e.innerHTML)||(e.innerHTML=d.__html),t.__k=[];else if(p&&(e.innerHTML=""),Pe(t.type=="template"?e.content:e,te(a)?a:[a],t,n,o,y=="foreignObject"?"http://www.w3.org/1999/xhtml":s,r,l,r?r[0]:n.__k&&A(n,0),c,u),r!=null)for(i=r.length;i--;)pe(r[i]);c&&y!="textarea"||(i="value",y=="progress"&&f==null?e.removeAttribute("value"):f!=null&&(f!==e[i]||y=="progress"&&!f||y=="option"&&f!=v[i])&&K(e,i,f,v[i],s),i="checked",w!=null&&w!=e[i]&&K(e,i,w,v[i],s))}return e}function be(e,t,n){try{if(typeof e=="function"){var o=typeof e.__u=="function";o&&e.__u(),o&&t==null||(e.__u=e(t))}else e.current=t}catch(s){g.__e(s,n)}}function De(e,t,n){var o,s;if(g.unmount&&g.unmount(e),(o=e.ref)&&(o.current&&o.current!=e.__e||be(o,null,t)),(o=e.__c)!=null){if(o.componentWillUnmount)try{o.componentWillUnmount()}catch(r){g.__e(r,t)}o.base=o.__P=o.__n=null}if(o=e.__k)for(s=0;s<o.length;s++)o[s]&&De(o[s],t,n||typeof e.type!="function");n||pe(e.__e),e.__c=e.__=e.__e=void 0}function ht(e,t,n){return this.constructor(e,n)}function Ue(e,t,n){var o,s,r,l;t==document&&(t=document.documentElement),g.__&&g.__(e,t),s=(o=typeof n=="function")?null:n&&n.__k||t.__k,r=[],l=[],fe(t,e=(!o&&n||t).__k=me(ne,null,[e]),s||Y,Y,t.namespaceURI,!o&&n?[n]:s?null:t.firstChild?ee.call(t.childNodes):null,r,!o&&n?n:s?s.__e:t.firstChild,o,l),Re(r,e,l),e.props.children=null}ee=X.slice,g={__e:function(e,t,n,o){for(var s,r,l;t=t.__;)if((s=t.__c)&&!s.__)try{if((r=s.constructor)&&r.getDerivedStateFromError!=null&&(s.setState(r.getDerivedStateFromError(e)),l=s.__d),s.componentDidCatch!=null&&(s.componentDidCatch(e,o||{}),l=s.__d),l)return s.__E=s}catch(c){e=c}throw e}},Se=0,ut=function(e){return e!=null&&e.constructor===void 0},Q.prototype.setState=function(e,t){var n;n=this.__s!=null&&this.__s!=this.state?this.__s:this.__s=U({},this.state),typeof e=="function"&&(e=e(U({},n),this.props)),e&&U(n,e),e!=null&&this.__v&&(t&&this._sb.push(t),we(this))},Q.prototype.forceUpdate=function(e){this.__v&&(this.__e=!0,e&&this.__h.push(e),we(this))},Q.prototype.render=ne,L=[],Ce=typeof Promise=="function"?Promise.prototype.then.bind(Promise.resolve()):setTimeout,Te=function(e,t){return e.__v.__b-t.__v.__b},Z.__r=0,ce=Math.random().toString(8),G="__d"+ce,W="__a"+ce,Ee=/(PointerCapture)$|Capture$/i,de=0,ue=xe(!1),_e=xe(!0),_t=0;var V,S,he,Le,re=0,We=[],C=g,Ae=C.__b,He=C.__r,Ie=C.diffed,Fe=C.__c,Me=C.unmount,Be=C.__;function $e(e,t){C.__h&&C.__h(S,e,re||t),re=0;var n=S.__H||(S.__H={__:[],__h:[]});return e>=n.__.length&&n.__.push({}),n.__[e]}function h(e){return re=1,yt(ze,e)}function yt(e,t,n){var o=$e(V++,2);if(o.t=e,!o.__c&&(o.__=[n?n(t):ze(void 0,t),function(c){var u=o.__N?o.__N[0]:o.__[0],i=o.t(u,c);u!==i&&(o.__N=[i,o.__[1]],o.__c.setState({}))}],o.__c=S,!S.__f)){var s=function(c,u,i){if(!o.__c.__H)return!0;var d=!1,p=o.__c.props!==c;if(o.__c.__H.__.some(function(_){if(_.__N){d=!0;var f=_.__[0];_.__=_.__N,_.__N=void 0,f!==_.__[0]&&(p=!0)}}),r){var a=r.call(this,c,u,i);return d?a||p:a}return!d||p};S.__f=!0;var r=S.shouldComponentUpdate,l=S.componentWillUpdate;S.componentWillUpdate=function(c,u,i){if(this.__e){var d=r;r=void 0,s(c,u,i),r=d}l&&l.call(this,c,u,i)},S.shouldComponentUpdate=s}return o.__N||o.__}function Ve(e,t){var n=$e(V++,3);!C.__s&&Ge(n.__H,t)&&(n.__=e,n.u=t,S.__H.__h.push(n))}function $t(e,t){var n=$e(V++,7);return Ge(n.__H,t)&&(n.__=e(),n.__H=t,n.__h=e),n.__}function Ke(e,t){return re=8,$t(function(){return e},t)}function vt(){for(var e;e=We.shift();){var t=e.__H;if(e.__P&&t)try{t.__h.some(oe),t.__h.some(ye),t.__h=[]}catch(n){t.__h=[],C.__e(n,e.__v)}}}C.__b=function(e){S=null,Ae&&Ae(e)},C.__=function(e,t){e&&t.__k&&t.__k.__m&&(e.__m=t.__k.__m),Be&&Be(e,t)},C.__r=function(e){He&&He(e),V=0;var t=(S=e.__c).__H;t&&(he===S?(t.__h=[],S.__h=[],t.__.some(function(n){n.__N&&(n.__=n.__N),n.u=n.__N=void 0})):(t.__h.some(oe),t.__h.some(ye),t.__h=[],V=0)),he=S},C.diffed=function(e){Ie&&Ie(e);var t=e.__c;t&&t.__H&&(t.__H.__h.length&&(We.push(t)!==1&&Le===C.requestAnimationFrame||((Le=C.requestAnimationFrame)||gt)(vt)),t.__H.__.some(function(n){n.u&&(n.__H=n.u,n.u=void 0)})),he=S=null},C.__c=function(e,t){t.some(function(n){try{n.__h.some(oe),n.__h=n.__h.filter(function(o){return!o.__||ye(o)})}catch(o){t.some(function(s){s.__h&&(s.__h=[])}),t=[],C.__e(o,n.__v)}}),Fe&&Fe(e,t)},C.unmount=function(e){Me&&Me(e);var t,n=e.__c;n&&n.__H&&(n.__H.__.some(function(o){try{oe(o)}catch(s){t=s}}),n.__H=void 0,t&&C.__e(t,n.__v))};var Je=typeof requestAnimationFrame=="function";function gt(e){var t,n=function(){clearTimeout(o),Je&&cancelAnimationFrame(t),setTimeout(e)},o=setTimeout(n,35);Je&&(t=requestAnimationFrame(n))}function oe(e){var t=S,n=e.__c;typeof n=="function"&&(e.__c=void 0,n()),S=t}function ye(e){var t=S;e.__c=e.__(),S=t}function Ge(e,t){return!e||e.length!==t.length||t.some(function(n,o){return n!==e[o]})}function ze(e,t){return typeof t=="function"?t(e):t}var Ye=function(e,t,n,o){var s;t[0]=0;for(var r=1;r<t.length;r++){var l=t[r++],c=t[r]?(t[0]|=l?1:2,n[t[r++]]):t[++r];l===3?o[0]=c:l===4?o[1]=Object.assign(o[1]||{},c):l===5?(o[1]=o[1]||{})[t[++r]]=c:l===6?o[1][t[++r]]+=c+"":l?(s=e.apply(c,Ye(e,c,n,["",null])),o.push(s),c[0]?t[0]|=2:(t[r-2]=0,t[r]=s)):o.push(c)}return o},Qe=new Map;function Xe(e){var t=Qe.get(this);return t||(t=new Map,Qe.set(this,t)),(t=Ye(this,t.get(e)||(t.set(e,t=function(n){for(var o,s,r=1,l="",c="",u=[0],i=function(a){r===1&&(a||(l=l.replace(/^\s*\n\s*|\s*\n\s*$/g,"")))?u.push(0,a,l):r===3&&(a||l)?(u.push(3,a,l),r=2):r===2&&l==="..."&&a?u.push(4,a,0):r===2&&l&&!a?u.push(5,0,!0,l):r>=5&&((l||!a&&r===5)&&(u.push(r,0,l,s),r=6),a&&(u.push(r,a,0,s),r=6)),l=""},d=0;d<n.length;d++){d&&(r===1&&i(),i(d));for(var p=0;p<n[d].length;p++)o=n[d][p],r===1?o==="<"?(i(),u=[u],r=3):l+=o:r===4?l==="--"&&o===">"?(r=1,l=""):l=o+l[0]:c?o===c?c="":l+=o:o==='"'||o==="'"?c=o:o===">"?(i(),r=1):r&&(o==="="?(r=5,s=l,l=""):o==="/"&&(r<5||n[d][p+1]===">")?(i(),r===3&&(u=u[0]),r=u,(u=u[0]).push(2,0,r),r=0):o===" "||o==="	"||o===`
`||o==="\r"?(i(),r=2):l+=o),r===3&&l==="!--"&&(r=4,u=u[0])}return i(),u}(e)),t),arguments,[])).length>1?t:t[0]}var m=Xe.bind(me);function P(e,t){let[n,o]=h({data:null,error:null,loading:!0}),s=Ke(()=>{o(r=>({...r,loading:!0})),e().then(r=>o({data:r,error:null,loading:!1}),r=>o({data:null,error:r,loading:!1}))},t);return Ve(s,[s]),{...n,reload:s}}function E({error:e}){return e?m`<p class="error" role="alert">${e.message??String(e)}</p>`:null}function $({id:e,label:t,children:n,hint:o}){return m`<div class="field"><label for=${e}>${t}</label>${n}${o?m`<small class="muted">${o}</small>`:null}</div>`}function R({offset:e,limit:t,count:n,onChange:o,label:s="Pages"}){return m`
    <nav class="pager" aria-label=${s}>
      <button type="button" class="secondary" disabled=${e===0}
        onClick=${()=>o(Math.max(0,e-t))}>Previous</button>
      <span>${n===0?"No rows":`Rows ${e+1}\u2013${e+n}`}</span>
      <button type="button" class="secondary" disabled=${n<t}
        onClick=${()=>o(e+t)}>Next</button>
    </nav>
  `}function N({columns:e,rows:t,caption:n,empty:o="Nothing yet"}){return!t||t.length===0?m`<p class="muted">${o}</p>`:m`
    <div class="table-wrap" tabindex="0" role="region" aria-label=${n??"Table"}>
      <table>${n?m`<caption>${n}</caption>`:null}
        <thead><tr>${e.map(s=>m`<th scope="col">${s.label}</th>`)}</tr></thead>
        <tbody>${t.map((s,r)=>m`<tr key=${s.id??r}>${e.map(l=>m`<td>${l.render?l.render(s):wt(s[l.key])}</td>`)}</tr>`)}</tbody>
      </table>
    </div>
  `}function wt(e){return e==null?"\u2014":typeof e=="object"?JSON.stringify(e):String(e)}function M({value:e,label:t}){return m`<pre class="json" aria-label=${t}>${typeof e=="string"?e:JSON.stringify(e,null,2)}</pre>`}function H(e,t){return()=>{globalThis.confirm(e)&&t()}}function ve({title:e,bars:t,unit:n=""}){let c=Math.max(1,...t.map(i=>Number(i.value)||0)),u=t.length*30+8;return m`
    <figure class="chart">
      <figcaption>${e}</figcaption>
      <svg viewBox=${`0 0 360 ${u}`} role="img" aria-label=${e}>
          ${t.map((i,d)=>{let p=8+d*30,a=(Number(i.value)||0)/c*180;return m`
              <g key=${i.label}>
                <text x="0" y=${p+15} class="chart-label">${i.label}</text>
                <rect x=${110} y=${p} width=${Math.max(1,a)} height=${22} rx="3" class=${`bar ${i.tone??""}`}></rect>
                <text x=${110+a+6} y=${p+15} class="chart-value">${i.value===null||i.value===void 0?"\u2014":`${kt(i.value)}${n}`}</text>
              </g>
            `})}
        </svg>
    </figure>
  `}var kt=e=>Math.round(Number(e)*100)/100;function B({tabs:e,current:t,onChange:n,label:o}){return m`<div role="tablist" aria-label=${o} class="tabs" onKeyDown=${r=>{let l=e.findIndex(([i])=>i===t),c=r.key==="ArrowRight"?1:r.key==="ArrowLeft"?-1:0;if(!c)return;let u=e[(l+c+e.length)%e.length][0];n(u),requestAnimationFrame(()=>document.getElementById(`tab-${u}`)?.focus())}}>${e.map(([r,l])=>m`
        <button type="button" role="tab" id=${`tab-${r}`} aria-selected=${r===t}
          tabindex=${r===t?0:-1} onClick=${()=>n(r)}>${l}</button>
      `)}</div>`}function O(e){return e.preventDefault(),Object.fromEntries(new FormData(e.currentTarget).entries())}function Ze(e,t){if(!(!e||!e.trim()))try{return JSON.parse(e)}catch{throw new Error(`${t} is not valid JSON`)}}var xt=()=>document.getElementById("app")?.dataset.project??"default",ae=class extends Error{constructor(t,n,o){super(o),this.status=t,this.code=n}};async function x(e,{method:t="GET",body:n,headers:o={}}={}){let s=e.startsWith("/v1/admin/")?e:`/console/api/${xt()}${e}`,r={method:t,headers:{...o},credentials:"same-origin"};n!==void 0&&(r.headers["content-type"]="application/json",r.body=JSON.stringify(n));let l=await fetch(s,r);if(l.status===401)throw location.reload(),new ae(401,"UNAUTHORIZED","Signed out");let c=await l.text(),u=null;try{u=c?JSON.parse(c):null}catch{u=null}if(!l.ok){let d=u?.error??u??{};throw new ae(l.status,d.code??String(l.status),d.message??l.statusText)}let i=u&&typeof u=="object"&&"data"in u&&!Array.isArray(u);return{data:i?u.data:u,meta:i?u.meta:null,headers:l.headers,status:l.status}}function et(e){let t=new URLSearchParams;for(let[o,s]of Object.entries(e))s!=null&&s!==""&&t.set(o,s);let n=t.toString();return n?`?${n}`:""}var tt=20;function nt(){let e=P(()=>x("/v1/admin/projects").then(_=>_.data),[]),[t,n]=h(0),[o,s]=h(null),[r,l]=h({}),c=_=>_().catch(s),u=_=>{let f=O(_),w=_.currentTarget;c(async()=>{let{data:v}=await x("/v1/admin/projects",{method:"POST",body:{ref:f.ref,...f.name?{name:f.name}:{}}});s(null),l(k=>({...k,[v.ref]:v})),w.reset(),e.reload()})},i=_=>c(async()=>{let{data:f}=await x(`/v1/admin/projects/${encodeURIComponent(_)}`);l(w=>({...w,[_]:f}))}),d=(_,f)=>H(`Rotate the ${f} key of "${_}"? The old key stops working at once.`,()=>c(async()=>{let{data:w}=await x(`/v1/admin/projects/${encodeURIComponent(_)}/keys/rotate`,{method:"POST",body:{kind:f}});l(v=>({...v,[_]:{...v[_],...w}}))})),p=_=>H(`Delete project "${_}", its keys and its whole database? This cannot be undone.`,()=>c(async()=>{await x(`/v1/admin/projects/${encodeURIComponent(_)}`,{method:"DELETE"}),e.reload()})),a=(e.data??[]).slice(t,t+tt);return m`
    <section aria-labelledby="new-project">
      <h2 id="new-project">New project</h2>
      <form class="inline" onSubmit=${u}>
        <${$} id="project-ref"
          label="Ref"><input id="project-ref" name="ref" required pattern="[a-z0-9-]{1,40}"
            placeholder="my-app" /><//>
          <${$} id="project-name" label="Name"><input id="project-name" name="name" placeholder="My app" /><//>
          <button type="submit">Create project</button>
        </form>
      </section>
      <${E} error=${o||e.error} />
      <section aria-labelledby="project-list">
        <h2 id="project-list">Projects</h2>
        <${N} caption="Projects" rows=${a} columns=${[{key:"ref",label:"Ref"},{key:"name",label:"Name"},{key:"api_url",label:"API URL"},{key:"created_at",label:"Created"},{key:"actions",label:"Actions",render:_=>m`
                <div class="actions">
                  <a href=${`/console/functions?project=${encodeURIComponent(_.ref)}`}>Open</a>
                  <button type="button" class="secondary" onClick=${()=>i(_.ref)}>Reveal keys</button>
                  <button type="button" class="secondary" onClick=${d(_.ref,"public")}>Rotate public key</button>
                  <button type="button" class="secondary" onClick=${d(_.ref,"secret")}>Rotate secret key</button>
                  <button type="button" class="danger" onClick=${p(_.ref)}>Delete</button>
                </div>
              `}]} />
        <${R} offset=${t} limit=${tt} count=${a.length} onChange=${n} />
      </section>
      ${Object.entries(r).map(([_,f])=>m`
          <section class="keys" key=${_} aria-label=${`Keys of ${_}`}>
            <h3>Keys of ${_}</h3>
            <dl>
              <dt>Public key (anon)</dt>
              <dd><code>${f.public_key}</code></dd>
              <dt>Secret key (service_role, servers only)</dt>
              <dd><code>${f.secret_key}</code></dd>
            </dl>
            <button type="button" class="secondary" onClick=${()=>l(w=>{let{[_]:v,...k}=w;return k})}>Hide keys</button>
          </section>
        `)}
  `}var ot=20,St=`export default {
  fetch(req) {
    console.log("called", req.method, new URL(req.url).pathname);
    return Response.json({ hello: "world" });
  },
};`;function rt(){let e=P(()=>x("/v1/functions").then(d=>d.data),[]),[t,n]=h(0),[o,s]=h(null),[r,l]=h("editor"),c=(d,p="editor")=>{s(d),l(p)},u=(e.data??[]).slice(t,t+ot),i=(e.data??[]).find(d=>d.name===o)??null;return m`<div class="split">
  <section aria-labelledby="fn-list">
    <h2 id="fn-list">Functions</h2>
    <button type="button" onClick=${()=>c("")}>New function</button>
    <${E} error=${e.error} />
    <${N} caption="Functions" rows=${u} empty="No functions yet: deploy one" columns=${[{key:"name",label:"Name",render:d=>m`<button type="button" class="link" onClick=${()=>c(d.name)}>${d.name}</button>`},{key:"runtime",label:"Runtime"},{key:"is_active",label:"Active",render:d=>d.is_active?"yes":"no"},{key:"updated_at",label:"Updated"}]} />
    <${R} offset=${t} limit=${ot} count=${u.length} onChange=${n} />
  </section>
  ${o!==null&&m`<section aria-labelledby="fn-detail" class="detail">
    <h2 id="fn-detail">${o||"New function"}</h2>
    ${o&&m`<${B} label="Function" current=${r} onChange=${l} tabs=${[["editor","Editor"],["invoke","Invoke"],["logs","Logs"],["stats","Stats"]]} />`}
    ${(r==="editor"||!o)&&m`<${Et} key=${o} fn=${i} onDeployed=${d=>{e.reload(),c(d,"invoke")}} onDeleted=${()=>{s(null),e.reload()}} />`}
    ${o&&r==="invoke"&&m`<${Pt} name=${o} />`}
    ${o&&r==="logs"&&m`<${Nt} name=${o} />`}
    ${o&&r==="stats"&&m`<${Rt} name=${o} />`}
  </section>`}
  </div>`}function Ct(e){return Object.entries(e??{}).map(([t,n])=>`${t}=${n}`).join(`
`)}function Tt(e){let t={};for(let n of e.split(`
`)){if(!n.trim())continue;let o=n.indexOf("=");if(o<1)throw new Error(`Environment line "${n}" is not KEY=value`);t[n.slice(0,o).trim()]=n.slice(o+1)}return t}function Et({fn:e,onDeployed:t,onDeleted:n}){let[o,s]=h(null),[r,l]=h(!1),c=e?.permissions,u=d=>{let p=O(d);l(!0),(async()=>{let a={allow_net:p.allow_net.split(",").map(f=>f.trim()).filter(Boolean),...p.memory_mb?{memory_mb:Number(p.memory_mb)}:{},...p.timeout_secs?{timeout_secs:Number(p.timeout_secs)}:{},...p.cpu_ms?{cpu_ms:Number(p.cpu_ms)}:{}},_={name:p.name,runtime:p.runtime,code:p.code,env_vars:Tt(p.env_vars),permissions:a,is_active:p.is_active==="on"};await x("/v1/functions",{method:"POST",body:_}),s(null),t(p.name)})().catch(s).finally(()=>l(!1))},i=H(`Delete function "${e?.name}"? Its code, logs and stats go with it.`,()=>x(`/v1/functions/${encodeURIComponent(e.name)}`,{method:"DELETE"}).then(n,s));return m`
    <form class="stack" onSubmit=${u} aria-label="Deploy">
      <${$} id="fn-name" label="Name"><input id="fn-name" name="name" required value=${e?.name??""}
          readOnly=${!!e} pattern="[a-z][a-z0-9_\\-]{0,62}" /><//>
        <${$} id="fn-runtime" label="Runtime"><select id="fn-runtime" name="runtime" value=${e?.runtime??"deno"}>
          <option value="deno">deno (TypeScript / JavaScript)</option><option value="wasm">wasm (base64 module)</option>
        </select><//>
        <${$} id="fn-code" label="Code"><textarea id="fn-code" name="code" rows="14" class="code" spellcheck="false"
          required>${e?.code??St}</textarea><//>
        <${$} id="fn-env" label="Environment variables" hint="One KEY=value a line; replaces the set">
          <textarea id="fn-env" name="env_vars" rows="3" class="code">${Ct(e?.env_vars)}</textarea><//>
        <fieldset><legend>Permissions</legend>
          <${$} id="fn-net" label="Allowed hosts (comma-separated)"><input id="fn-net" name="allow_net"
            value=${(c?.allow_net??[]).join(", ")} /><//>
          <div class="row">
            <${$} id="fn-mem" label="Memory (MB)"><input id="fn-mem" name="memory_mb" type="number" min="1"
              value=${c?.memory_mb??""} /><//>
            <${$} id="fn-timeout" label="Timeout (s)"><input id="fn-timeout" name="timeout_secs" type="number" min="1"
              value=${c?.timeout_secs??""} /><//>
            <${$} id="fn-cpu" label="CPU per call (ms)"><input id="fn-cpu" name="cpu_ms" type="number" min="1"
              value=${c?.cpu_ms??""} /><//>
          </div>
        </fieldset>
        <div class="check"><input id="fn-active" name="is_active" type="checkbox" checked=${e?.is_active??!0} />
          <label for="fn-active">Active</label></div>
        <${E} error=${o} />
        <div class="actions">
          <button type="submit" disabled=${r}>${r?"Deploying\u2026":"Deploy"}</button>
          ${e&&m`<button type="button" class="danger" onClick=${i}>Delete function</button>`}
        </div>
      </form>
  `}function jt(e){let t={};for(let n of e.split(`
`)){if(!n.trim())continue;let o=n.indexOf(":");if(o<1)throw new Error(`Header line "${n}" is not "Name: value"`);t[n.slice(0,o).trim()]=n.slice(o+1).trim()}return t}function Pt({name:e}){let[t,n]=h(null),[o,s]=h(null),[r,l]=h(!1);return m`
    <form class="stack" onSubmit=${u=>{let i=O(u);l(!0),(async()=>{let d=i.body;try{d=i.body.trim()?JSON.parse(i.body):void 0}catch{d=i.body}let{data:p}=await x(`/v1/functions/${encodeURIComponent(e)}/invoke`,{method:"POST",body:{method:i.method,path:i.path||"/",headers:jt(i.headers),body:d}});s(null),n(p)})().catch(d=>{n(null),s(d)}).finally(()=>l(!1))}} aria-label="Invoke">
      <div class="row">
        <${$} id="inv-method" label="Method"><select id="inv-method" name="method">
            ${["GET","POST","PUT","PATCH","DELETE"].map(u=>m`<option>${u}</option>`)}
          </select><//>
          <${$} id="inv-path" label="Path"><input id="inv-path" name="path" value="/" /><//>
        </div>
        <${$} id="inv-headers" label="Headers" hint="One Name: value a line">
          <textarea id="inv-headers" name="headers" rows="2" class="code"></textarea><//>
        <${$} id="inv-body" label="Body" hint="JSON or text"><textarea id="inv-body" name="body" rows="4"
          class="code"></textarea><//>
        <button type="submit" disabled=${r}>${r?"Invoking\u2026":"Invoke"}</button>
      </form>
      <${E} error=${o} />
      ${t&&m`
          <div class="result" aria-live="polite">
            <p><strong>Status</strong> <span class="status" data-testid="invoke-status">${t.status}</span>
                · <strong>Duration</strong> ${Math.round(t.duration_ms*10)/10} ms</p>
            <h3>Headers</h3>
            <${M} value=${t.headers} label="Response headers" />
            <h3>Body</h3>
            <${M} value=${t.body} label="Response body" />
            <h3>Logs</h3>
            <${M} value=${t.logs.join(`
`)||"(none)"} label="Logs" />
          </div>
        `}
  `}function Nt({name:e}){let[t,n]=h(""),[o,s]=h(0),r=P(()=>x(`/v1/functions/${encodeURIComponent(e)}/logs?limit=1000${t?`&level=${t}`:""}`).then(c=>c.data),[e,t]),l=(r.data??[]).slice(o,o+50);return m`
    <div class="inline">
      <${$} id="log-level" label="Level"><select id="log-level" value=${t}
          onChange=${c=>(s(0),n(c.currentTarget.value))}>
          <option value="">all</option>${["debug","info","warn","error"].map(c=>m`<option>${c}</option>`)}
        </select><//>
        <button type="button" class="secondary" onClick=${r.reload}>Refresh</button>
      </div>
      <${E} error=${r.error} />
      <${N} caption="Logs" rows=${l} empty="No log lines" columns=${[{key:"timestamp",label:"Time"},{key:"level",label:"Level"},{key:"message",label:"Message"}]} />
      <${R} offset=${o} limit=${50} count=${l.length} onChange=${s} />
  `}var qt=["1h","24h","7d","30d"];function Rt({name:e}){let t=P(()=>Promise.all(qt.map(o=>x(`/v1/functions/${encodeURIComponent(e)}/stats?window=${o}`))).then(o=>o.map(s=>s.data)),[e]);if(t.error)return m`<${E} error=${t.error} />`;if(!t.data)return m`<p class="muted">Loading…</p>`;let n=t.data[1];return m`
    <div class="charts">
      <${ve} title="Latency over the last 24 h" unit=" ms" bars=${[{label:"p50",value:n.p50_ms},{label:"p95",value:n.p95_ms},{label:"average",value:n.avg_ms}]} />
      <${ve} title="Calls and failures by window" bars=${t.data.flatMap(o=>[{label:`${o.window} calls`,value:o.count},{label:`${o.window} errors`,value:o.errors+o.timeouts+o.oom,tone:"bad"}])} />
    </div>
    <${N} caption="Stats by window" rows=${t.data} columns=${[{key:"window",label:"Window"},{key:"count",label:"Calls"},{key:"errors",label:"Errors"},{key:"timeouts",label:"Timeouts"},{key:"oom",label:"Out of memory"},{key:"p50_ms",label:"p50 (ms)"},{key:"p95_ms",label:"p95 (ms)"}]} />
    <button type="button" class="secondary" onClick=${t.reload}>Refresh</button>
  `}var at=25,Ot=["pending","running","completed","failed","dead"];function st(){let[e,t]=h("jobs"),[n,o]=h(""),[s,r]=h(0),[l,c]=h(null),[u,i]=h(null),[d,p]=h(null),a=e==="dlq"?"/v1/functions/jobs/dlq":"/v1/functions/jobs",_=P(()=>x(a+et({status:e==="dlq"?"":n,limit:at,offset:s})).then(b=>b.data),[e,n,s]),f=P(()=>l?x(`/v1/functions/jobs/${l}`).then(b=>b.data):Promise.resolve(null),[l]),w=b=>b().then(()=>(i(null),_.reload(),f.reload()),i),v=b=>{let j=O(b);w(async()=>{let D={function_name:j.function_name},J=Ze(j.payload,"Payload");J!==void 0&&(D.payload=J),j.max_attempts&&(D.max_attempts=Number(j.max_attempts));let{data:I}=await x("/v1/functions/jobs",{method:"POST",body:D});p(`Job ${I.id} enqueued`)})},k=H("Put every dead job back to pending?",()=>w(async()=>{let{data:b}=await x("/v1/functions/jobs/dlq/requeue",{method:"POST"});p(`${b.requeued} job(s) requeued`)})),y=b=>w(()=>x(`/v1/functions/jobs/${b}/retry`,{method:"POST"})),T=_.data??[];return m`
    <details class="card">
      <summary>Enqueue a job</summary>
      <form class="inline" onSubmit=${v}>
        <${$} id="job-fn" label="Function"><input id="job-fn" name="function_name" required /><//>
          <${$} id="job-payload" label="Payload (JSON)"><input id="job-payload" name="payload" /><//>
          <${$} id="job-attempts" label="Max attempts"><input id="job-attempts" name="max_attempts" type="number"
            min="1" max="25" /><//>
          <button type="submit">Enqueue</button>
        </form></details>
      <${B} label="Jobs" current=${e} onChange=${b=>(r(0),t(b))}
        tabs=${[["jobs","All jobs"],["dlq","Dead letters"]]} />
      <div class="inline">
        ${e==="jobs"&&m`<${$} id="job-status" label="Status"><select id="job-status" value=${n}
      onChange=${b=>(r(0),o(b.currentTarget.value))}>
      <option value="">any</option>${Ot.map(b=>m`<option>${b}</option>`)}
    </select><//>`}
        ${e==="dlq"&&m`<button type="button" onClick=${k}>Requeue all dead jobs</button>`}
        <button type="button" class="secondary" onClick=${_.reload}>Refresh</button>
      </div>
      ${d&&m`<p class="note" role="status">${d}</p>`}
      <${E} error=${u||_.error} />
      <${N} caption=${e==="dlq"?"Dead jobs":"Jobs"} rows=${T} empty="No jobs" columns=${[{key:"id",label:"Job",render:b=>m`<button type="button" class="link" onClick=${()=>c(b.id)}>${b.id.slice(0,8)}</button>`},{key:"function_name",label:"Function"},{key:"status",label:"Status",render:b=>m`<span class=${`badge ${b.status}`}>${b.status}</span>`},{key:"attempts",label:"Attempts",render:b=>`${b.attempts}/${b.max_attempts}`},{key:"error",label:"Error"},{key:"created_at",label:"Created"},{key:"retry",label:"Actions",render:b=>b.status==="failed"||b.status==="dead"?m`<button type="button" class="secondary" onClick=${()=>y(b.id)}>Retry</button>`:null}]} />
      <${R} offset=${s} limit=${at} count=${T.length} onChange=${r} />
      ${f.data&&m`<section class="card" aria-labelledby="job-detail"><h2 id="job-detail">Job ${f.data.id}</h2>
    <${M} value=${f.data} label="Job" />
    <button type="button" class="secondary" onClick=${()=>c(null)}>Close</button></section>`}
  `}var se=25,Dt="select table_schema || '.' || table_name as name from information_schema.tables where table_schema = 'public' order by 1";function lt(){let[e,t]=h("tables");return m`
    <${B} label="Data" current=${e} onChange=${t}
      tabs=${[["tables","Table browser"],["sql","SQL runner"]]} />
      ${e==="tables"?m`<${Ut} />`:m`<${Lt} />`}
  `}function it(e){return(e.length?Object.keys(e[0]):[]).map(n=>({key:n,label:n}))}function Ut(){let e=P(()=>x("/v1/sql",{method:"POST",body:{query:Dt}}).then(p=>p.data.map(a=>a.name)),[]),[t,n]=h(""),[o,s]=h(""),[r,l]=h(""),[c,u]=h(0),i=P(async()=>{if(!t)return null;let p=t.replace(/^public\./,""),a=new URLSearchParams(o);a.set("limit",String(se)),a.set("offset",String(c)),r&&a.set("order",r);let _=await x(`/rest/v1/${encodeURIComponent(p)}?${a}`,{headers:{prefer:"count=exact"}});return{rows:_.data,range:_.headers.get("content-range")}},[t,o,r,c]);return m`
    <form class="inline" onSubmit=${p=>{let a=O(p);u(0),n(a.table),s(a.filter),l(a.order)}} aria-label="Browse a table">
      <${$} id="tb-table" label="Table"><select id="tb-table" name="table" required>
          <option value="">choose…</option>${(e.data??[]).map(p=>m`<option>${p}</option>`)}
        </select><//>
        <${$} id="tb-filter" label="Filters" hint="The data API's: id=gt.10&name=like.*a*"><input id="tb-filter"
          name="filter" placeholder="id=gt.10" /><//>
        <${$} id="tb-order" label="Order"><input id="tb-order" name="order" placeholder="id.desc" /><//>
        <button type="submit">Show rows</button>
      </form>
      <${E} error=${e.error||i.error} />
      ${i.data&&m`
          <p class="muted">${i.data.range?`Range ${i.data.range}`:""}</p>
          <${N} caption=${t} rows=${i.data.rows} columns=${it(i.data.rows)} empty="No rows" />
          <${R} offset=${c} limit=${se} count=${i.data.rows.length} onChange=${u} />
        `}
  `}function Lt(){let[e,t]=h(null),[n,o]=h(null),[s,r]=h(0),l=i=>{let d=O(i),p=performance.now();x("/v1/sql",{method:"POST",body:{query:d.query}}).then(a=>{o(null),r(0),t({rows:a.data,ms:performance.now()-p})},a=>{t(null),o(a)})},c=i=>{(i.ctrlKey||i.metaKey)&&i.key==="Enter"&&i.currentTarget.form.requestSubmit()},u=e?e.rows.slice(s,s+se):[];return m`
    <form class="stack" onSubmit=${l} aria-label="SQL runner">
      <${$} id="sql-query" label="SQL" hint="Runs as the project's owner; Ctrl+Enter runs">
          <textarea id="sql-query" name="query" rows="6" class="code" spellcheck="false" onKeyDown=${c}
            required>select now() as now, current_user as role</textarea><//>
        <button type="submit">Run</button>
      </form>
      <${E} error=${n} />
      ${e&&m`
          <p class="muted" role="status">${e.rows.length} row(s) in ${Math.round(e.ms)} ms</p>
          <${N} caption="Result" rows=${u} columns=${it(e.rows)} empty="No rows returned" />
          <${R} offset=${s} limit=${se} count=${u.length} onChange=${r} />
        `}
  `}var At={projects:nt,functions:rt,jobs:st,data:lt},le=document.getElementById("app");if(le){let e=At[le.dataset.view],t=le.querySelector("h1")?.textContent??"";Ue(m`<h1>${t}</h1>${e?m`<${e} />`:m`<p>Not built yet</p>`}`,le)}var ct=document.getElementById("project-select");ct?.addEventListener("change",()=>ct.form?.requestSubmit());
