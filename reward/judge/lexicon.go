package judge

import "strings"

// lexicon holds closed word classes per language: articles, pronouns,
// prepositions, conjunctions, common adverbs and auxiliaries, number words,
// weekdays and months. Content words are left to the character n-gram
// model so that it, not a word list, decides open-class words.
var lexicon = map[string]string{
	"en": `the a an of and or to in on at for with from by about into over under after before between
		without within through during near up down out off than as is are was were be been being am
		has have had do does did will would can could should may might must shall not no yes all any
		some each every this that these those it its he she they we you i me him her us them my your
		his our their mine yours what which who whom whose where when why how there here then
		very more most less least much many few only also just too again so but if because while
		until per via one two three four five six seven eight nine ten eleven twelve thirteen fourteen
		fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
		ninety hundred thousand million monday tuesday wednesday thursday friday saturday sunday
		january february march april june july august september october november december`,
	"es": `el la los las un una unos unas lo de del al a en con por para sin sobre entre hasta desde
		hacia contra según durante mediante tras y e o u ni que como pero si porque cuando donde
		mientras es son era fue ser estar está están soy hay ha han he muy más menos mucho muchos
		mucha muchas poco todo todos toda todas otro otra otros otras este esta estos estas ese esa
		esos esas aquel aquella mi mis tu tus su sus nuestro nuestra nuestros nuestras yo tú él ella
		ellos ellas nosotros vosotros usted ustedes me te se nos le les qué cuál quién cómo dónde
		cuándo también ya no sí aquí allí hoy ayer cero uno dos tres cuatro cinco seis siete ocho nueve
		diez once doce trece catorce quince dieciséis diecisiete dieciocho diecinueve veinte
		veintiuno veintidós veintitrés veinticuatro veinticinco treinta cuarenta cincuenta sesenta
		setenta ochenta noventa cien ciento mil millón lunes martes miércoles jueves viernes sábado
		domingo enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre
		noviembre diciembre`,
	"fr": `le la les l un une des du de d au aux à en dans sur sous avec sans pour par chez entre vers
		depuis pendant avant après contre et ou ni mais donc or car que qui quoi dont où comme si
		quand est sont était être avoir a ont ai suis es sommes êtes très plus moins beaucoup peu
		tout tous toute toutes autre autres ce cet cette ces mon ma mes ton ta tes son sa ses notre
		nos votre vos leur leurs je tu il elle nous vous ils elles on me te se lui y ne pas non oui
		aussi déjà ici là aujourd hier zéro un deux trois quatre cinq six sept huit neuf dix onze
		douze treize quatorze quinze seize dix-sept vingt trente quarante cinquante soixante cent
		mille million lundi mardi mercredi jeudi vendredi samedi dimanche janvier février mars avril
		mai juin juillet août septembre octobre novembre décembre`,
	"it": `il lo la i gli le un uno una di del dello della dei degli delle a al allo alla ai agli
		alle da dal dalla dai in nel nello nella nei negli nelle con su sul sulla per tra fra senza
		sopra sotto verso dopo prima e ed o oppure ma però che chi cui come se quando dove perché
		è sono era essere ho ha hanno molto più meno poco tutto tutti tutta tutte altro altra altri
		questo questa questi queste quello quella mio mia miei mie tuo tua suo sua nostro nostra
		vostro loro io tu lui lei noi voi mi ti si ci vi ne non sì anche già qui qua lì là oggi ieri
		zero uno due tre quattro cinque sei sette otto nove dieci undici dodici tredici quattordici
		quindici sedici diciassette diciotto diciannove venti trenta quaranta cinquanta sessanta
		settanta ottanta novanta cento mille milione lunedì martedì mercoledì giovedì venerdì sabato
		domenica gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre
		novembre dicembre`,
	"nl": `de het een van in op aan met voor door bij naar uit over onder tegen tussen zonder tot
		sinds na om te en of maar want dus dat die dit deze wie wat waar wanneer waarom hoe als dan
		is zijn was waren ben bent heb hebt heeft hebben wordt worden zal zou kan kunnen moet moeten
		niet geen wel ja nee heel zeer meer minder veel weinig alle alles elk ieder ander andere mijn
		jouw je uw zijn haar ons onze hun ik jij hij zij wij we jullie mij me hem ze er hier daar
		ook al nog vandaag gisteren nul een twee drie vier vijf zes zeven acht negen tien elf twaalf
		dertien veertien vijftien zestien zeventien achttien negentien twintig dertig veertig
		vijftig zestig zeventig tachtig negentig honderd duizend miljoen maandag dinsdag woensdag
		donderdag vrijdag zaterdag zondag januari februari maart april mei juni juli augustus
		september oktober november december`,
	"de": `der die das den dem des ein eine einen einem einer eines von vom zu zum zur in im an am
		auf aus bei beim mit nach seit über unter vor hinter neben zwischen durch für gegen ohne um
		bis und oder aber denn sondern dass ob wenn als wie wo wann warum was wer ist sind war waren
		sein bin bist hat habe haben wird werden kann können muss müssen soll nicht kein keine ja
		nein sehr mehr weniger viel viele wenig alle alles jeder jede anderen andere mein meine dein
		deine sein seine ihr ihre unser unsere euer ich du er sie es wir ihr mich mir dich dir ihn
		ihm uns euch auch schon noch hier dort da heute gestern null eins zwei drei vier fünf sechs
		sieben acht neun zehn elf zwölf dreizehn vierzehn fünfzehn sechzehn siebzehn achtzehn
		neunzehn zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig hundert tausend
		million montag dienstag mittwoch donnerstag freitag samstag sonntag januar februar märz
		april mai juni juli august september oktober november dezember`,
	"pt": `o a os as um uma uns umas de do da dos das em no na nos nas ao aos à às com por pelo pela
		para sem sobre entre até desde contra durante após e ou nem mas que quem qual como se quando
		onde porque é são era foi ser estar está estão sou tem têm há muito mais menos pouco todo
		todos toda todas outro outra outros outras este esta estes estas esse essa isso isto aquele
		aquela meu minha meus minhas teu tua seu sua seus suas nosso nossa eu tu ele ela nós vós eles
		elas você vocês me te lhe nos não sim também já aqui ali hoje ontem zero um dois duas três
		quatro cinco seis sete oito nove dez onze doze treze catorze quatorze quinze dezesseis
		dezassete dezoito dezenove dezanove vinte trinta quarenta cinquenta sessenta setenta oitenta
		noventa cem cento mil milhão segunda terça quarta quinta sexta sábado domingo feira janeiro
		fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro`,
}

// lexSets is lexicon split into word sets, built on first use.
var lexSets = func() map[string]map[string]bool {
	m := make(map[string]map[string]bool, len(lexicon))
	for lang, words := range lexicon {
		set := map[string]bool{}
		for _, w := range strings.Fields(words) {
			set[w] = true
		}
		m[lang] = set
	}
	return m
}()
