package synth

// Named entities, enum words and identifier pools.
//
// Cities and currencies are named entities: an API's description decides
// whether the gold value is the English name ("City name in English") or the
// name as the user wrote it. Enum categories pair each enum value (Key, what
// the gold call stores, never translated) with the words users say for it.
// Identifier pools (contacts, restaurants, e-mail addresses, paths) are the
// same in every language and copied unchanged.

// ent builds an entry with an explicit key.
func ent(key string, en, es, fr, it, nl string) Entry {
	return Entry{Key: key, T: [5]string{en, es, fr, it, nl}}
}

var lexNamed = map[string][]Entry{
	// Cities: Key and T[0] are the English name.
	"city": free(
		[5]string{"London", "Londres", "Londres", "Londra", "Londen"},
		[5]string{"Paris", "París", "Paris", "Parigi", "Parijs"},
		[5]string{"Rome", "Roma", "Rome", "Roma", "Rome"},
		[5]string{"Munich", "Múnich", "Munich", "Monaco di Baviera", "München"},
		[5]string{"Venice", "Venecia", "Venise", "Venezia", "Venetië"},
		[5]string{"Florence", "Florencia", "Florence", "Firenze", "Florence"},
		[5]string{"Milan", "Milán", "Milan", "Milano", "Milaan"},
		[5]string{"Naples", "Nápoles", "Naples", "Napoli", "Napels"},
		[5]string{"Lisbon", "Lisboa", "Lisbonne", "Lisbona", "Lissabon"},
		[5]string{"Brussels", "Bruselas", "Bruxelles", "Bruxelles", "Brussel"},
		[5]string{"Vienna", "Viena", "Vienne", "Vienna", "Wenen"},
		[5]string{"Prague", "Praga", "Prague", "Praga", "Praag"},
		[5]string{"Athens", "Atenas", "Athènes", "Atene", "Athene"},
		[5]string{"Geneva", "Ginebra", "Genève", "Ginevra", "Genève"},
		[5]string{"Cologne", "Colonia", "Cologne", "Colonia", "Keulen"},
		[5]string{"Seville", "Sevilla", "Séville", "Siviglia", "Sevilla"},
		[5]string{"Copenhagen", "Copenhague", "Copenhague", "Copenaghen", "Kopenhagen"},
		[5]string{"Warsaw", "Varsovia", "Varsovie", "Varsavia", "Warschau"},
		[5]string{"Berlin", "Berlín", "Berlin", "Berlino", "Berlijn"},
		[5]string{"Antwerp", "Amberes", "Anvers", "Anversa", "Antwerpen"},
		[5]string{"Barcelona", "Barcelona", "Barcelone", "Barcellona", "Barcelona"},
		[5]string{"Stockholm", "Estocolmo", "Stockholm", "Stoccolma", "Stockholm"},
		[5]string{"Edinburgh", "Edimburgo", "Édimbourg", "Edimburgo", "Edinburgh"},
		[5]string{"Dublin", "Dublín", "Dublin", "Dublino", "Dublin"},
		[5]string{"Marseille", "Marsella", "Marseille", "Marsiglia", "Marseille"},
		[5]string{"Turin", "Turín", "Turin", "Torino", "Turijn"},
		[5]string{"Genoa", "Génova", "Gênes", "Genova", "Genua"},
		[5]string{"New York", "Nueva York", "New York", "New York", "New York"},
		[5]string{"Tokyo", "Tokio", "Tokyo", "Tokyo", "Tokio"},
		[5]string{"Beijing", "Pekín", "Pékin", "Pechino", "Peking"},
		[5]string{"Zurich", "Zúrich", "Zurich", "Zurigo", "Zürich"},
		[5]string{"Basel", "Basilea", "Bâle", "Basilea", "Bazel"},
		[5]string{"Bruges", "Brujas", "Bruges", "Bruges", "Brugge"},
		[5]string{"Ghent", "Gante", "Gand", "Gand", "Gent"},
		[5]string{"Nice", "Niza", "Nice", "Nizza", "Nice"},
		[5]string{"Bordeaux", "Burdeos", "Bordeaux", "Bordeaux", "Bordeaux"},
		[5]string{"Strasbourg", "Estrasburgo", "Strasbourg", "Strasburgo", "Straatsburg"},
		[5]string{"Moscow", "Moscú", "Moscou", "Mosca", "Moskou"},
		[5]string{"Istanbul", "Estambul", "Istanbul", "Istanbul", "Istanboel"},
		[5]string{"Madrid", "Madrid", "Madrid", "Madrid", "Madrid"},
		[5]string{"Amsterdam", "Ámsterdam", "Amsterdam", "Amsterdam", "Amsterdam"},
		[5]string{"Mexico City", "Ciudad de México", "Mexico", "Città del Messico", "Mexico-Stad"},
		[5]string{"Lyon", "Lyon", "Lyon", "Lione", "Lyon"},
	),
	// Currencies: Key is the ISO 4217 code; T[0] the English plural name.
	"currency": {
		ent("EUR", "euros", "euros", "euros", "euro", "euro"),
		ent("USD", "dollars", "dólares", "dollars", "dollari", "dollar"),
		ent("GBP", "pounds", "libras", "livres sterling", "sterline", "pond"),
		ent("JPY", "yen", "yenes", "yens", "yen", "yen"),
		ent("CHF", "Swiss francs", "francos suizos", "francs suisses", "franchi svizzeri", "Zwitserse frank"),
	},
}

var lexEnum = map[string][]Entry{
	"cabin": {
		ent("economy", "economy class", "clase turista", "classe économique", "classe economica", "economyklasse"),
		ent("business", "business class", "clase business", "classe affaires", "classe business", "businessklasse"),
		ent("first", "first class", "primera clase", "première classe", "prima classe", "eerste klas"),
	},
	"room_type": {
		ent("single", "single room", "habitación individual", "chambre simple", "camera singola", "eenpersoonskamer"),
		ent("double", "double room", "habitación doble", "chambre double", "camera doppia", "tweepersoonskamer"),
		ent("suite", "suite", "suite", "suite", "suite", "suite"),
	},
	// With the indefinite article the templates need.
	"car_class": {
		ent("compact", "a compact car", "un coche pequeño", "une petite voiture", "un'auto compatta", "een kleine auto"),
		ent("van", "a van", "una furgoneta", "une camionnette", "un furgone", "een busje"),
		ent("luxury", "a luxury car", "un coche de lujo", "une voiture de luxe", "un'auto di lusso", "een luxe auto"),
		ent("family", "a family car", "un coche familiar", "une voiture familiale", "un'auto familiare", "een gezinsauto"),
	},
	"cuisine": {
		ent("italian", "Italian", "italiana", "italienne", "italiana", "Italiaanse"),
		ent("japanese", "Japanese", "japonesa", "japonaise", "giapponese", "Japanse"),
		ent("mexican", "Mexican", "mexicana", "mexicaine", "messicana", "Mexicaanse"),
		ent("indian", "Indian", "india", "indienne", "indiana", "Indiase"),
		ent("chinese", "Chinese", "china", "chinoise", "cinese", "Chinese"),
		ent("french", "French", "francesa", "française", "francese", "Franse"),
		ent("thai", "Thai", "tailandesa", "thaïlandaise", "thailandese", "Thaise"),
		ent("greek", "Greek", "griega", "grecque", "greca", "Griekse"),
	},
	"channel": {
		ent("sms", "SMS", "SMS", "SMS", "SMS", "sms"),
		ent("whatsapp", "WhatsApp", "WhatsApp", "WhatsApp", "WhatsApp", "WhatsApp"),
		ent("telegram", "Telegram", "Telegram", "Telegram", "Telegram", "Telegram"),
	},
	"call_mode": {
		ent("voice", "voice call", "llamada de voz", "appel vocal", "chiamata vocale", "spraakoproep"),
		ent("video", "video call", "videollamada", "appel vidéo", "videochiamata", "videogesprek"),
	},
	"account": {
		ent("checking", "checking account", "cuenta corriente", "compte courant", "conto corrente", "betaalrekening"),
		ent("savings", "savings account", "cuenta de ahorro", "compte épargne", "conto di risparmio", "spaarrekening"),
		ent("business", "business account", "cuenta de empresa", "compte professionnel", "conto aziendale", "zakelijke rekening"),
	},
	"bill": {
		ent("electricity", "electricity bill", "factura de la luz", "facture d'électricité", "bolletta della luce", "energierekening"),
		ent("water", "water bill", "factura del agua", "facture d'eau", "bolletta dell'acqua", "waterrekening"),
		ent("internet", "internet bill", "factura de internet", "facture internet", "bolletta di internet", "internetrekening"),
		ent("phone", "phone bill", "factura del teléfono", "facture de téléphone", "bolletta del telefono", "telefoonrekening"),
		ent("gas", "gas bill", "factura del gas", "facture de gaz", "bolletta del gas", "gasrekening"),
	},
	"expense": {
		ent("food", "food", "comida", "alimentation", "cibo", "eten"),
		ent("transport", "transport", "transporte", "transport", "trasporti", "vervoer"),
		ent("housing", "housing", "vivienda", "logement", "casa", "wonen"),
		ent("leisure", "leisure", "ocio", "loisirs", "svago", "vrije tijd"),
		ent("health", "health", "salud", "santé", "salute", "gezondheid"),
	},
	"unit": {
		ent("celsius", "Celsius", "grados Celsius", "degrés Celsius", "gradi Celsius", "graden Celsius"),
		ent("fahrenheit", "Fahrenheit", "grados Fahrenheit", "degrés Fahrenheit", "gradi Fahrenheit", "graden Fahrenheit"),
	},
	"hazard": {
		ent("storm", "storm", "tormentas", "orages", "temporali", "onweer"),
		ent("flood", "flood", "inundaciones", "inondations", "alluvioni", "overstromingen"),
		ent("heat", "heat", "calor", "canicule", "caldo", "hitte"),
		ent("snow", "snow", "nieve", "neige", "neve", "sneeuw"),
		ent("wind", "wind", "viento fuerte", "vent fort", "vento forte", "harde wind"),
	},
	"file_type": {
		ent("pdf", "PDF files", "archivos PDF", "fichiers PDF", "file PDF", "pdf-bestanden"),
		ent("docx", "Word documents", "documentos Word", "documents Word", "documenti Word", "Word-documenten"),
		ent("xlsx", "spreadsheets", "hojas de cálculo", "tableurs", "fogli di calcolo", "rekenbladen"),
		ent("jpg", "photos", "fotos", "photos", "foto", "foto's"),
		ent("mp3", "songs", "canciones", "chansons", "canzoni", "liedjes"),
	},
	"permission": {
		ent("view", "read-only", "solo lectura", "lecture seule", "sola lettura", "alleen-lezen"),
		ent("edit", "edit", "edición", "modification", "modifica", "bewerken"),
	},
	"priority": {
		ent("low", "low", "baja", "basse", "bassa", "lage"),
		ent("medium", "medium", "media", "moyenne", "media", "gemiddelde"),
		ent("high", "high", "alta", "haute", "alta", "hoge"),
	},
	// With the indefinite article the templates need.
	"place_type": {
		ent("pharmacy", "a pharmacy", "una farmacia", "une pharmacie", "una farmacia", "een apotheek"),
		ent("atm", "an ATM", "un cajero automático", "un distributeur de billets", "un bancomat", "een geldautomaat"),
		ent("gas_station", "a gas station", "una gasolinera", "une station-service", "un distributore di benzina", "een tankstation"),
		ent("hospital", "a hospital", "un hospital", "un hôpital", "un ospedale", "een ziekenhuis"),
		ent("supermarket", "a supermarket", "un supermercado", "un supermarché", "un supermercato", "een supermarkt"),
		ent("parking", "a car park", "un aparcamiento", "un parking", "un parcheggio", "een parkeergarage"),
	},
	"genre": {
		ent("rock", "rock music", "música rock", "musique rock", "musica rock", "rockmuziek"),
		ent("jazz", "jazz", "jazz", "jazz", "jazz", "jazz"),
		ent("classical", "classical music", "música clásica", "musique classique", "musica classica", "klassieke muziek"),
		ent("pop", "pop music", "música pop", "musique pop", "musica pop", "popmuziek"),
		ent("reggae", "reggae", "reggae", "reggae", "reggae", "reggae"),
	},
	"door": {
		ent("front", "front door", "puerta principal", "porte d'entrée", "porta d'ingresso", "voordeur"),
		ent("back", "back door", "puerta trasera", "porte de derrière", "porta sul retro", "achterdeur"),
		ent("garage", "garage door", "puerta del garaje", "porte du garage", "porta del garage", "garagedeur"),
	},
	"specialty": {
		ent("general", "family doctor", "médico de cabecera", "médecin généraliste", "medico di base", "huisarts"),
		ent("dentist", "dentist", "dentista", "dentiste", "dentista", "tandarts"),
		ent("dermatology", "dermatologist", "dermatólogo", "dermatologue", "dermatologo", "dermatoloog"),
		ent("pediatrics", "pediatrician", "pediatra", "pédiatre", "pediatra", "kinderarts"),
		ent("cardiology", "cardiologist", "cardiólogo", "cardiologue", "cardiologo", "cardioloog"),
	},
	// Target languages of translate_text (none is a benchmark user language
	// other than English, which English users never ask for).
	"target_language": {
		ent("de", "German", "alemán", "allemand", "tedesco", "Duits"),
		ent("en", "English", "inglés", "anglais", "inglese", "Engels"),
		ent("pt", "Portuguese", "portugués", "portugais", "portoghese", "Portugees"),
		ent("ja", "Japanese", "japonés", "japonais", "giapponese", "Japans"),
	},
	// currency codes reuse the "currency" named-entity words.
}

// Identifier pools: copied unchanged in every language.
var idPools = map[string][]string{
	"contact": {"Ana", "Marco", "Sophie", "Pieter", "Lucía", "Giulia", "Thomas", "Emma", "Javier", "Chiara",
		"Luc", "Daan", "Carmen", "Paolo", "Julie", "Sanne", "Miguel", "Elena", "Hugo", "Lotte"},
	"email": {"ana.lopez@example.com", "marco.rossi@example.com", "sophie.martin@example.com",
		"pieter.devries@example.com", "julie.bernard@example.com", "daan.jansen@example.com",
		"carmen.ruiz@example.com", "paolo.bianchi@example.com", "info@acme.example", "support@shop.example"},
	"restaurant": {"Casa Lucia", "Bella Napoli", "Golden Dragon", "Petit Bistro", "Sakura Sushi", "El Rincon",
		"Taj Mahal", "Blue Lagoon", "Trattoria Mario", "Green Garden", "La Taverna", "Burger House"},
	"path": {"/docs/report.pdf", "/docs/contract.docx", "/home/photos/beach.jpg", "/work/budget.xlsx",
		"/music/song.mp3", "/notes/ideas.txt", "/photos/party.jpg", "/work/slides.pdf",
		"/docs/invoice_2024.pdf", "/home/cv.docx"},
	"folder_path": {"/home", "/docs", "/work", "/shared", "/photos"},
	// Flight numbers are built from an airline code and digits (see sample).
	"airline": {"IB", "AF", "KL", "AZ", "LH", "BA", "VY", "TP"},
}

// category returns the entries of a lexicon category (free-form, named or
// enum) and whether it exists.
func category(cat string) ([]Entry, bool) {
	if e, ok := lexFree[cat]; ok {
		return e, true
	}
	if e, ok := lexNamed[cat]; ok {
		return e, true
	}
	if cat == "currency_code" {
		return lexNamed["currency"], true
	}
	e, ok := lexEnum[cat]
	return e, ok
}

// LexiconSize counts the user-facing values with five translations: the
// free-form values, the named entities and the enum words.
func LexiconSize() int {
	n := 0
	for _, m := range []map[string][]Entry{lexFree, lexNamed, lexEnum} {
		for _, e := range m {
			n += len(e)
		}
	}
	return n
}
