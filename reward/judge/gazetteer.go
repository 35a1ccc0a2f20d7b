package judge

import "strings"

// gazetteer lists place names (countries, continents, large cities) as
// each language writes them, columns en|es|fr|it|nl|de|pt. Word lists
// leave proper names out, and a character model cannot tell "London" from
// "Londres"; place names are among the commonest argument values.
const gazetteer = `
Germany|Alemania|Allemagne|Germania|Duitsland|Deutschland|Alemanha
Spain|España|Espagne|Spagna|Spanje|Spanien|Espanha
France|Francia|France|Francia|Frankrijk|Frankreich|França
Italy|Italia|Italie|Italia|Italië|Italien|Itália
Netherlands|Países Bajos|Pays-Bas|Paesi Bassi|Nederland|Niederlande|Países Baixos
Portugal|Portugal|Portugal|Portogallo|Portugal|Portugal|Portugal
United Kingdom|Reino Unido|Royaume-Uni|Regno Unito|Verenigd Koninkrijk|Vereinigtes Königreich|Reino Unido
England|Inglaterra|Angleterre|Inghilterra|Engeland|England|Inglaterra
Scotland|Escocia|Écosse|Scozia|Schotland|Schottland|Escócia
United States|Estados Unidos|États-Unis|Stati Uniti|Verenigde Staten|Vereinigte Staaten|Estados Unidos
Mexico|México|Mexique|Messico|Mexico|Mexiko|México
Brazil|Brasil|Brésil|Brasile|Brazilië|Brasilien|Brasil
Argentina|Argentina|Argentine|Argentina|Argentinië|Argentinien|Argentina
Japan|Japón|Japon|Giappone|Japan|Japan|Japão
China|China|Chine|Cina|China|China|China
Switzerland|Suiza|Suisse|Svizzera|Zwitserland|Schweiz|Suíça
Belgium|Bélgica|Belgique|Belgio|België|Belgien|Bélgica
Austria|Austria|Autriche|Austria|Oostenrijk|Österreich|Áustria
Greece|Grecia|Grèce|Grecia|Griekenland|Griechenland|Grécia
Sweden|Suecia|Suède|Svezia|Zweden|Schweden|Suécia
Norway|Noruega|Norvège|Norvegia|Noorwegen|Norwegen|Noruega
Denmark|Dinamarca|Danemark|Danimarca|Denemarken|Dänemark|Dinamarca
Finland|Finlandia|Finlande|Finlandia|Finland|Finnland|Finlândia
Ireland|Irlanda|Irlande|Irlanda|Ierland|Irland|Irlanda
Poland|Polonia|Pologne|Polonia|Polen|Polen|Polónia
Russia|Rusia|Russie|Russia|Rusland|Russland|Rússia
Turkey|Turquía|Turquie|Turchia|Turkije|Türkei|Turquia
Egypt|Egipto|Égypte|Egitto|Egypte|Ägypten|Egito
Morocco|Marruecos|Maroc|Marocco|Marokko|Marokko|Marrocos
India|India|Inde|India|India|Indien|Índia
Canada|Canadá|Canada|Canada|Canada|Kanada|Canadá
Australia|Australia|Australie|Australia|Australië|Australien|Austrália
South Africa|Sudáfrica|Afrique du Sud|Sudafrica|Zuid-Afrika|Südafrika|África do Sul
Peru|Perú|Pérou|Perù|Peru|Peru|Peru
Colombia|Colombia|Colombie|Colombia|Colombia|Kolumbien|Colômbia
Chile|Chile|Chili|Cile|Chili|Chile|Chile
Cuba|Cuba|Cuba|Cuba|Cuba|Kuba|Cuba
Thailand|Tailandia|Thaïlande|Thailandia|Thailand|Thailand|Tailândia
Korea|Corea|Corée|Corea|Korea|Korea|Coreia
Croatia|Croacia|Croatie|Croazia|Kroatië|Kroatien|Croácia
Hungary|Hungría|Hongrie|Ungheria|Hongarije|Ungarn|Hungria
Czech Republic|República Checa|République tchèque|Repubblica Ceca|Tsjechië|Tschechien|República Checa
Europe|Europa|Europe|Europa|Europa|Europa|Europa
Africa|África|Afrique|Africa|Afrika|Afrika|África
Asia|Asia|Asie|Asia|Azië|Asien|Ásia
America|América|Amérique|America|Amerika|Amerika|América
London|Londres|Londres|Londra|Londen|London|Londres
Paris|París|Paris|Parigi|Parijs|Paris|Paris
Rome|Roma|Rome|Roma|Rome|Rom|Roma
Milan|Milán|Milan|Milano|Milaan|Mailand|Milão
Venice|Venecia|Venise|Venezia|Venetië|Venedig|Veneza
Florence|Florencia|Florence|Firenze|Florence|Florenz|Florença
Naples|Nápoles|Naples|Napoli|Napels|Neapel|Nápoles
Turin|Turín|Turin|Torino|Turijn|Turin|Turim
Genoa|Génova|Gênes|Genova|Genua|Genua|Génova
Munich|Múnich|Munich|Monaco di Baviera|München|München|Munique
Cologne|Colonia|Cologne|Colonia|Keulen|Köln|Colónia
Vienna|Viena|Vienne|Vienna|Wenen|Wien|Viena
Brussels|Bruselas|Bruxelles|Bruxelles|Brussel|Brüssel|Bruxelas
Antwerp|Amberes|Anvers|Anversa|Antwerpen|Antwerpen|Antuérpia
The Hague|La Haya|La Haye|L'Aia|Den Haag|Den Haag|Haia
Lisbon|Lisboa|Lisbonne|Lisbona|Lissabon|Lissabon|Lisboa
Seville|Sevilla|Séville|Siviglia|Sevilla|Sevilla|Sevilha
Geneva|Ginebra|Genève|Ginevra|Genève|Genf|Genebra
Zurich|Zúrich|Zurich|Zurigo|Zürich|Zürich|Zurique
Athens|Atenas|Athènes|Atene|Athene|Athen|Atenas
Moscow|Moscú|Moscou|Mosca|Moskou|Moskau|Moscovo
Prague|Praga|Prague|Praga|Praag|Prag|Praga
Warsaw|Varsovia|Varsovie|Varsavia|Warschau|Warschau|Varsóvia
Copenhagen|Copenhague|Copenhague|Copenaghen|Kopenhagen|Kopenhagen|Copenhaga
Stockholm|Estocolmo|Stockholm|Stoccolma|Stockholm|Stockholm|Estocolmo
Edinburgh|Edimburgo|Édimbourg|Edimburgo|Edinburgh|Edinburgh|Edimburgo
Dublin|Dublín|Dublin|Dublino|Dublin|Dublin|Dublin
Berlin|Berlín|Berlin|Berlino|Berlijn|Berlin|Berlim
Marseille|Marsella|Marseille|Marsiglia|Marseille|Marseille|Marselha
Lyon|Lyon|Lyon|Lione|Lyon|Lyon|Lyon
Barcelona|Barcelona|Barcelone|Barcellona|Barcelona|Barcelona|Barcelona
Madrid|Madrid|Madrid|Madrid|Madrid|Madrid|Madrid
Amsterdam|Ámsterdam|Amsterdam|Amsterdam|Amsterdam|Amsterdam|Amesterdão
New York|Nueva York|New York|New York|New York|New York|Nova Iorque
Mexico City|Ciudad de México|Mexico|Città del Messico|Mexico-Stad|Mexiko-Stadt|Cidade do México
Tokyo|Tokio|Tokyo|Tokyo|Tokio|Tokio|Tóquio
Beijing|Pekín|Pékin|Pechino|Peking|Peking|Pequim
Cairo|El Cairo|Le Caire|Il Cairo|Caïro|Kairo|Cairo
Istanbul|Estambul|Istanbul|Istanbul|Istanboel|Istanbul|Istambul
Cape Town|Ciudad del Cabo|Le Cap|Città del Capo|Kaapstad|Kapstadt|Cidade do Cabo
Jerusalem|Jerusalén|Jérusalem|Gerusalemme|Jeruzalem|Jerusalem|Jerusalém
Bucharest|Bucarest|Bucarest|Bucarest|Boekarest|Bukarest|Bucareste
`

// gazLangs maps each word of a place name (lower-cased, at least four
// letters, not a closed-class word) to the languages writing it so.
var gazLangs = func() map[string]map[string]bool {
	cols := []string{"en", "es", "fr", "it", "nl", "de", "pt"}
	out := map[string]map[string]bool{}
	for _, row := range strings.Split(strings.TrimSpace(gazetteer), "\n") {
		for i, name := range strings.Split(row, "|") {
			for _, t := range tokenize(name) {
				if len([]rune(t.text)) < 4 || inAnyLexicon(t.text, cols) {
					continue
				}
				if out[t.text] == nil {
					out[t.text] = map[string]bool{}
				}
				out[t.text][cols[i]] = true
			}
		}
	}
	return out
}()
